# SPDX-License-Identifier: GPL-2.0-only
target_link_libraries(ukern_bench_${suite} PRIVATE ukern_devices)
