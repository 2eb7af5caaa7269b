// Boost.Test's framework, compiled once into the static library every test
// binary links (test/CMakeLists.txt, libmerge_boost_test). Each test source
// includes only <boost/test/unit_test.hpp> and names its module with
// BOOST_TEST_MODULE, which defines the init function main() calls
// (boost_test_main.cpp). Included in each test, the framework cost some 22 s
// of host compilation per binary (31 binaries, g++ 12 -O3); linked
// statically, the binaries still need no Boost library at run time (the GPU
// machine has none).
#define BOOST_TEST_NO_MAIN
#include <boost/test/included/unit_test.hpp>
