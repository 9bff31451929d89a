// Formatting shared by the report translation units (report.cpp,
// report_runtime.cpp): numbers for people, tables, verdicts, JSON figures.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>
#include <vector>

#include "runtime/model/json_writer.hpp"

namespace skein::bench::detail {

std::string with_commas(uint64_t v);
std::string fixed(double v, int decimals);
std::string ms(double us);        // microseconds as milliseconds, 3 decimals
std::string mb(uint64_t bytes);   // bytes as MiB, 1 decimal
// Left-aligns the first `names` columns, right-aligns the figures.
void print_table(const std::vector<std::vector<std::string>>& rows, std::FILE* out, size_t names = 2);
const char* verdict(bool met);
// A JSON key from a row's name: "lace-design FULL" -> "lace_design_full".
std::string json_name(std::string text);
void write_number(json_writer& w, std::string_view key, double v);
double per_thread(uint64_t after, uint64_t before, size_t threads);
std::string at_least(double figure, double target);  // "(target >= N: met)"
std::string at_most(double figure, double target);   // "(target <= N: MISSED)"
void write_target(json_writer& w, std::string_view name, double figure, double target, bool met);

}  // namespace skein::bench::detail
