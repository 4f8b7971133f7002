// The one Catch2 main shared by every test binary.
//
// g++ 12 at -O1 with the sanitizers (make SAN=1) reports a false
// -Wmaybe-uninitialized inside <regex> as instantiated by Catch2's main;
// it is not our code, so it is silenced for this one file.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#define CATCH_CONFIG_MAIN
#include <catch2/catch.hpp>
