// prints.cpp - Catch2 tests that write to stdout (behind prints.xml): C stdio lands
// inside the XML report, std::cout in <StdOut>, and markup breaks the report.
#include <catch2/catch.hpp>
#include <cstdio>
#include <iostream>
TEST_CASE("prints", "[unit]") { printf("from printf\n"); std::cout << "from cout\n"; REQUIRE(1 == 1); }
TEST_CASE("prints and fails", "[unit]") { printf("printf <b>&\n"); fflush(stdout); REQUIRE(1 == 2); }
