# e2e test of the admin API: lbctl against a real lbagent process (helper
# "api"). Included at the end of tests/e2e/CMakeLists.txt.
add_test(NAME e2e_api_lbctl COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/api_lbctl_test.sh)
set_tests_properties(e2e_api_lbctl PROPERTIES
  LABELS e2e
  TIMEOUT 180
  RUN_SERIAL TRUE
  ENVIRONMENT "LBAGENT=$<TARGET_FILE:lbagent>;LBCTL=$<TARGET_FILE:lbctl>")
