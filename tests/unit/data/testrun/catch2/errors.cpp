// errors.cpp - the extra Catch2 tests behind errors.xml (an exception, sections with
// INFO and FAIL, a name with spec characters, a hidden test), built with the catch2
// fixture's test_main.o and stack.o.
#include <catch2/catch.hpp>
#include <stdexcept>
#include "stack.h"
TEST_CASE("pop on empty throws out of the test", "[unit]")
{
    Stack s(2);
    INFO("the stack is empty");
    s.pop();
}
TEST_CASE("sections, info and FAIL", "[unit]")
{
    Stack s(2);
    SECTION("first push") {
        int n = 3;
        INFO("n is " << n);
        CHECK(s.push(n) == false);
    }
    SECTION("explicit fail") {
        FAIL("gave up: <no & way>");
    }
}
TEST_CASE("hidden one", "[.]") { REQUIRE(false); }
TEST_CASE("name, with [brackets] and \"quotes\"", "[unit]") { REQUIRE(1 == 1); }
