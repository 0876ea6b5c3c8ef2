# lbagent end-to-end tests (tests/e2e/agent_*.sh): a netns lab with lbagent
# in the router namespace, driven by lbctl. Root required; the scripts fail
# (never skip) without it. Included from tests/e2e/CMakeLists.txt, which
# also passes _agent_env to the lab test.
set(_agent_env "")
foreach(_t lbagent lbctl lbdp)
  string(TOUPPER ${_t} _var)
  if(TARGET ${_t})
    list(APPEND _agent_env "${_var}=$<TARGET_FILE:${_t}>")
  else()
    # Registered anyway: a missing binary is a loud failure, not a gap.
    list(APPEND _agent_env "${_var}=${CMAKE_BINARY_DIR}/tools/${_t}/${_t}")
  endif()
endforeach()

foreach(_name metrics restart drain systemd bounce_path)
  add_test(NAME e2e_agent_${_name} COMMAND ${CMAKE_CURRENT_LIST_DIR}/agent_${_name}.sh)
  set_tests_properties(e2e_agent_${_name} PROPERTIES
    LABELS e2e
    TIMEOUT 240
    RUN_SERIAL TRUE
    ENVIRONMENT "${_agent_env}")
endforeach()
