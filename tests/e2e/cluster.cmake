# Cluster end-to-end tests (tests/e2e/cluster_*.sh): one netns lab per
# lbagent node, a real etcd cluster (3 members) in its own namespace, lbagent
# in cluster mode. Root and etcd required; the scripts fail (never skip)
# without them. Included from tests/e2e/CMakeLists.txt after health.cmake
# (_health_env: LBAGENT=, LBCTL=, LBDP=, TESTBACKEND=).
ballast_e2e_scripts(cluster 300 "${_health_env}")
