# nabla_test(NAME <name> SOURCES <files...> LIBS <targets...> [ROOT] [TIMEOUT <s>])
#
# Builds one GoogleTest executable and registers it with CTest. ROOT marks a
# test that needs root and network namespaces: it gets the CTest label `root`
# and runs serially (RUN_SERIAL) because it touches kernel state. Such tests
# skip with a clear message when not root, unless NABLA_REQUIRE_ROOT=1 is set
# in the environment, which turns that skip into a failure (CI sets it).
function(nabla_test)
  cmake_parse_arguments(T "ROOT" "NAME;TIMEOUT" "SOURCES;LIBS" ${ARGN})
  add_executable(${T_NAME} ${T_SOURCES})
  target_link_libraries(${T_NAME} PRIVATE ${T_LIBS} GTest::gtest GTest::gtest_main Threads::Threads)
  target_include_directories(${T_NAME} PRIVATE ${PROJECT_SOURCE_DIR}/tests/support)
  add_test(NAME ${T_NAME} COMMAND ${T_NAME})
  if(NOT T_TIMEOUT)
    set(T_TIMEOUT 120)
  endif()
  set_tests_properties(${T_NAME} PROPERTIES TIMEOUT ${T_TIMEOUT})
  if(T_ROOT)
    set_tests_properties(${T_NAME} PROPERTIES LABELS "root" RUN_SERIAL TRUE)
  else()
    set_tests_properties(${T_NAME} PROPERTIES LABELS "unit")
  endif()
endfunction()
