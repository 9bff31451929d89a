// Boost.URL's compiled part (it is header-only in Boost 1.81 when one source
// includes src.hpp): here alone, so that no other source pays for it.
#include <boost/url/src.hpp>
