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

ballast_e2e_scripts(health 300 "${_health_env}")
