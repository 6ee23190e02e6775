# SPDX-License-Identifier: GPL-2.0-only
# The shim suite compares ukern's RCU with liburcu's memb flavour
# (benchmark-only dependency; Debian: liburcu-dev).
find_package(PkgConfig REQUIRED)
pkg_check_modules(URCU_MEMB REQUIRED IMPORTED_TARGET liburcu-memb)
target_link_libraries(ukern_bench_${suite} PRIVATE PkgConfig::URCU_MEMB)
