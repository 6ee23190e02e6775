# SPDX-License-Identifier: GPL-2.0-only
# The radix-tree tests once more with 8-slot nodes (RADIX_TREE_MAP_SHIFT 3,
# the kernel harness's default) so that trees are deep and corner cases get
# hit. The tree is compiled into the test binary itself with the shift
# overridden; the ukern_shim copy (shift 6) is then never linked in.
set(_radix_tgt shim_radix_tree_shift3_test)
add_executable(${_radix_tgt}
  ${CMAKE_CURRENT_SOURCE_DIR}/radix_tree_test.cc
  ${CMAKE_CURRENT_SOURCE_DIR}/radix_tree_rcu_test.cc
  ${PROJECT_SOURCE_DIR}/kernel_shim/radix-tree.cc)
target_compile_definitions(${_radix_tgt} PRIVATE UKERN_RADIX_TREE_MAP_SHIFT=3)
target_link_libraries(${_radix_tgt} PRIVATE ukern_shim ukern_testmain GTest::gtest)
gtest_discover_tests(${_radix_tgt} TEST_PREFIX "shift3." DISCOVERY_TIMEOUT 60
  PROPERTIES LABELS shim TIMEOUT 300)
