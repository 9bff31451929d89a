// skein: the command-line entry point. Every subcommand, its --help and its
// usage errors come from the parser in tools/cli/app.cpp.
namespace skein::tools::cli {
int run(int argc, char** argv);
}

int main(int argc, char** argv) { return skein::tools::cli::run(argc, argv); }
