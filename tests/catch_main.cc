// The one Catch2 main shared by every test binary.
//
// Like every program of the project (base/cli_util.h), --help prints the
// usage on stdout and exits 0, and a bad argument is named on stderr with
// exit 2 (Catch2's own main returns 255 for it).
//
// g++ 12 at -O1 with the sanitizers (make SAN=1) reports a false
// -Wmaybe-uninitialized inside <regex> as instantiated by Catch2's main;
// it is not our code, so it is silenced for this one file.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>

#include <cstring>

int main(int argc, char** argv) {
  Catch::Session session;
  // --help wins over every other argument, right or wrong.
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--help") == 0 || std::strcmp(argv[i], "-h") == 0 || std::strcmp(argv[i], "-?") == 0) {
      char* help[] = {argv[0], argv[i], nullptr};
      return session.applyCommandLine(2, help) == 0 ? 0 : 2;
    }
  }
  if (session.applyCommandLine(argc, argv) != 0) return 2;
  return session.run();
}
