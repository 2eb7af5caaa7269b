// Boost.Test's framework and main(), compiled once into a static library that
// every test binary links (test/CMakeLists.txt). Each test source includes only
// <boost/test/unit_test.hpp> and names its module with BOOST_TEST_MODULE,
// which defines the init function this main() calls. Included in each test,
// the framework cost some 22 s of host compilation per binary (31 binaries,
// g++ 12 -O3); linked statically, the binaries still need no Boost library at
// run time (the GPU machine has none).
#include <boost/test/included/unit_test.hpp>
