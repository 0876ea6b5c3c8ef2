# Health-checking end-to-end tests (tests/e2e/health_*.sh): the netns lab with
# ballast-testbackend servers and lbagent with health checking on, under
# continuous load. Root required; the scripts fail (never skip) without it.
# Included from tests/e2e/CMakeLists.txt after agent.cmake (_agent_env).
set(_health_env ${_agent_env})
if(TARGET ballast-testbackend)
  list(APPEND _health_env "TESTBACKEND=$<TARGET_FILE:ballast-testbackend>")
else()
  list(APPEND _health_env
       "TESTBACKEND=${CMAKE_BINARY_DIR}/tools/testbackend/ballast-testbackend")
endif()

file(GLOB _health_tests RELATIVE ${CMAKE_CURRENT_LIST_DIR} ${CMAKE_CURRENT_LIST_DIR}/health_*.sh)
list(REMOVE_ITEM _health_tests health_lib.sh)
foreach(_script ${_health_tests})
  string(REGEX REPLACE "\\.sh$" "" _name ${_script})
  add_test(NAME e2e_${_name} COMMAND ${CMAKE_CURRENT_LIST_DIR}/${_script})
  set_tests_properties(e2e_${_name} PROPERTIES
    LABELS e2e
    TIMEOUT 300
    RUN_SERIAL TRUE
    ENVIRONMENT "${_health_env}")
endforeach()
