// The demo prints the Modern GPU demonstrations exactly as the seeds show them:
// each printout of seeds/000 and seeds/003 (test/data/seed_printouts.txt) must
// appear, whitespace collapsed, in the demo's output on the serial backend.
#define BOOST_TEST_MODULE demo_output
#include <boost/test/unit_test.hpp>

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "demo/demonstrations.hpp"

namespace {

std::string collapse_whitespace(const std::string& s) {
  std::istringstream in(s);
  std::string word, out;
  while (in >> word) out += (out.empty() ? "" : " ") + word;
  return out;
}

std::vector<std::string> seed_printouts() {
  std::ifstream f(LIBMERGE_TEST_DATA "/seed_printouts.txt");
  std::vector<std::string> lines;
  for (std::string line; std::getline(f, line);) {
    if (!line.empty() && line[0] != '#') lines.push_back(collapse_whitespace(line));
  }
  return lines;
}

}  // namespace

BOOST_AUTO_TEST_CASE(demo_reproduces_the_seed_printouts) {
  const auto expected = seed_printouts();
  BOOST_REQUIRE_EQUAL(expected.size(), 4u);
  std::ostringstream out;
  demo::run_demonstrations(out, libmerge::serial);
  const std::string printed = collapse_whitespace(out.str());
  for (const auto& block : expected) {
    BOOST_CHECK_MESSAGE(printed.find(block) != std::string::npos,
                        "demo output lacks the seed printout starting '" << block.substr(0, 60) << "'");
  }
}
