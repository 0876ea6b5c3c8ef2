# BGP/ECMP end-to-end tests (tests/e2e/bgp_*.sh): the ECMP lab
# (tools/lab/ecmp: a BIRD tor with multipath routes, two routers with BIRD,
# lbagent and ballast-announce). Root and bird2 required; the scripts fail
# (never skip) without them. Included from tests/e2e/CMakeLists.txt after
# agent.cmake (_agent_env).
set(_bgp_env ${_agent_env})
if(TARGET ballast-announce)
  list(APPEND _bgp_env "ANNOUNCE=$<TARGET_FILE:ballast-announce>")
else()
  list(APPEND _bgp_env "ANNOUNCE=${CMAKE_BINARY_DIR}/agent/bgp/ballast-announce")
endif()

file(GLOB _bgp_tests RELATIVE ${CMAKE_CURRENT_LIST_DIR} ${CMAKE_CURRENT_LIST_DIR}/bgp_*.sh)
list(REMOVE_ITEM _bgp_tests bgp_lib.sh)
foreach(_script ${_bgp_tests})
  string(REGEX REPLACE "\\.sh$" "" _name ${_script})
  add_test(NAME e2e_${_name} COMMAND ${CMAKE_CURRENT_LIST_DIR}/${_script})
  set_tests_properties(e2e_${_name} PROPERTIES
    LABELS e2e
    TIMEOUT 240
    RUN_SERIAL TRUE
    ENVIRONMENT "${_bgp_env}")
endforeach()
