// main() of the test binaries, in a file of its own within libmerge_boost_test:
// the linker takes it from the static library only for a binary that has no
// main() of its own (test_nccl_multigpu has one: it reports "skipped" before
// Boost.Test starts). Every test source is compiled with
// BOOST_TEST_ALTERNATIVE_INIT_API (a public definition of the library), so
// BOOST_TEST_MODULE defines this init function.
#include <boost/test/unit_test.hpp>

bool init_unit_test();

int main(int argc, char* argv[]) { return boost::unit_test::unit_test_main(&init_unit_test, argc, argv); }
