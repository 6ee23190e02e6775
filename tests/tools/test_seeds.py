#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0-only
"""Tests of tools/seeds.py (`tools/ukern seeds`) without running a benchmark.

Canned Google Benchmark JSON in seeds_samples/ (the shapes the radix, aio,
nullb and sbitmap suites write, with made-up figures whose medians and ratios
are known) goes through each seed's reduction, and the pages are written
into a temporary directory.
"""
import json
import os
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
SAMPLES = os.path.join(HERE, "seeds_samples")
sys.path.insert(0, os.path.join(HERE, "..", "..", "tools"))

import seeds  # noqa: E402

try:
    import matplotlib  # noqa: F401
    HAVE_MPL = True
except ImportError:
    HAVE_MPL = False


def sample(name):
    with open(os.path.join(SAMPLES, name)) as f:
        return json.load(f)


def pipetest_runs():
    """Two rounds of each stall-fix setting from the sample output: the
    first run printed in it has the fix on, the second off."""
    with open(os.path.join(SAMPLES, "pipetest.txt")) as f:
        text = f.read()
    on, off = text.split("stall fix off")
    return {"fix": [seeds.parse_pipetest(on)] * 2, "nofix": [seeds.parse_pipetest(off)] * 2}


def figures():
    """Every seed's figures from the samples, as a run would store them."""
    return {
        "aio-retry": seeds.analyze_aio_retry(pipetest_runs()),
        "aio-table": seeds.analyze_aio_table(sample("aio-contexts.json"),
                                             sample("aio-one.json")),
        "aio-percpu": seeds.analyze_aio_percpu(sample("aio-percpu.json")),
        "radix-iter": seeds.analyze_radix(
            sample("radix-1024.json"), sample("radix-large.json"),
            {"radix/tagged/before/slots:1024/step:16": 13000.0,
             "radix/tagged/after/slots:1024/step:16": 3900.0,
             "radix/normal/before/slots:1024/step:16": None}),
        "sbitmap-wake": seeds.analyze_sbitmap(sample("nullb-paired.json"),
                                              sample("sbq-plugged.json"),
                                              sample("sbitmap-tests.json")),
    }


def meta(quick=False):
    return {"commit": "abc1234", "machine": "AMD EPYC, nproc 2 (2-vCPU VM), Linux 6.1",
            "date": "2026-01-01 12:00 UTC", "load": "0.1 / 0.1 / 0.1", "quick": quick,
            "seconds": 10, "commands": [{"argv": ["build/release/benchmarks/ukern_bench_radix",
                                                  "--benchmark_filter=^radix/"],
                                         "env": {"UKERN_X": "1"}}]}


def section(md, number):
    start = md.index(f"\n## {number}. ")
    end = md.find("\n## ", start + 1)
    return md[start:end if end > 0 else len(md)]


class ParseTest(unittest.TestCase):
    def test_iterations_skip_aggregates_and_errors(self):
        data = sample("radix-1024.json")
        runs = seeds.iterations(data)
        self.assertTrue(all(r["run_type"] == "iteration" for r in runs))
        self.assertFalse(any(r.get("error_occurred") for r in runs))
        self.assertEqual(len(runs), 5 * 2 * 2 * 3)

    def test_base_name_and_units(self):
        run = {"name": "BM_X/4/0/iterations:1/manual_time", "cpu_time": 2.5,
               "real_time": 3.0, "time_unit": "ms"}
        self.assertEqual(seeds.base_name(run), "BM_X/4/0")
        self.assertEqual(seeds.base_name({"name": "BM_R/real_time/threads:2"}),
                         "BM_R/threads:2")
        self.assertEqual(seeds.time_ns(run), 2.5e6)
        self.assertEqual(seeds.time_ns(run, "real_time"), 3e6)

    def test_median_of_repetitions(self):
        g = seeds.group(sample("radix-1024.json"))
        runs = g["radix/tagged/before/slots:1024/step:1"]
        self.assertEqual(len(runs), 3)
        self.assertAlmostEqual(seeds.med_field(runs, "cpu_time"), 3000.0)

    def test_spearman(self):
        self.assertAlmostEqual(seeds.spearman([1, 2, 3, 4], [4, 3, 2, 1]), -1.0)
        self.assertAlmostEqual(seeds.spearman([1, 2, 3, 4], [1, 2, 3, 4]), 1.0)
        self.assertIsNone(seeds.spearman([1, 2], [2, 1]))

    def test_fmt(self):
        self.assertEqual(seeds.fmt(1234567.8), "1,234,568")
        self.assertEqual(seeds.fmt(0.5), "0.500")
        self.assertEqual(seeds.fmt(None), "-")
        self.assertEqual(seeds.fix(1.0), "1.00")


class ReduceTest(unittest.TestCase):
    def test_radix(self):
        f = figures()["radix-iter"]
        small = f["small"]["ns"]
        self.assertEqual(f["small"]["size"], 1024)
        self.assertEqual(f["small"]["reps"], 3)
        self.assertAlmostEqual(small["tagged"]["after"]["16"] / small["tagged"]["before"]["16"],
                               0.3)
        self.assertEqual(f["large"]["size"], 1 << 20)
        self.assertAlmostEqual(f["large"]["ns"]["tagged"]["before"]["64"], 2e6)
        self.assertEqual(f["icount"]["tagged"]["after"]["16"], 3900.0)
        self.assertIsNone(f["icount"]["normal"]["before"]["16"])

    def test_aio_table(self):
        f = figures()["aio-table"]
        self.assertEqual(f["ns_per_io"]["list"][-1], 100 + 2 * 512)
        self.assertEqual(f["ns_per_io"]["table"][-1], 100 + 512 // 16)
        self.assertAlmostEqual(f["one_ctx"]["median"], 1.01)
        self.assertAlmostEqual(f["one_ctx"]["p25"], 0.99)
        self.assertAlmostEqual(f["one_ctx"]["p75"], 1.05)

    def test_aio_percpu(self):
        f = figures()["aio-percpu"]
        self.assertAlmostEqual(f["submit_only"]["before_3_9"]["median"], 0.45)
        self.assertAlmostEqual(f["submit_only"]["after"]["median"], 0.01)
        self.assertNotIn("host_kernel", f["submit_only"])
        self.assertAlmostEqual(f["whole"]["host_kernel"]["median"], 0.07)
        # BM_Sharing: private and shared are separate benchmarks, paired by repetition
        self.assertAlmostEqual(f["reaper"]["before"]["median"], 2 / 3)
        self.assertAlmostEqual(f["reaper"]["after"]["median"], 0.5)
        self.assertAlmostEqual(f["reaper"]["after"]["shared_ns"], 200.0)
        self.assertNotIn("before_3_9", f["reaper"])

    def test_sbitmap(self):
        f = figures()["sbitmap-wake"]
        self.assertAlmostEqual(f["iops"]["single"]["16"]["today_over_v61"], 0.9)
        self.assertEqual(f["iops"]["shared"]["2"]["submitters"], 8.0)
        self.assertEqual(f["plugged"]["2"]["v61_timeouts"], 8)
        self.assertEqual(f["plugged"]["2"]["today_timeouts"], 0)
        self.assertEqual(f["plugged"]["2"]["pairs"], 2)

    def test_pipetest(self):
        runs = pipetest_runs()
        self.assertEqual(runs["fix"][0]["before"]["passes_s"], 249369)
        self.assertAlmostEqual(runs["fix"][0]["after"]["cs_pass"], 365 / 1579659)
        f = seeds.analyze_aio_retry(runs)
        self.assertEqual(f["rounds"], 2)
        self.assertAlmostEqual(f["fix"]["passes_after_before"]["median"], 1579659 / 249369)
        self.assertEqual(f["nofix"]["states"]["after"]["cs_s"], 296)

    def test_gtest_results(self):
        report = sample("sbitmap-tests.json")
        self.assertEqual(set(seeds.gtest_results(report).values()), {"passed"})
        report["testsuites"][0]["testsuite"][1]["failures"] = [
            {"failure": "sbitmap_test.cc:600\nExpected: ...", "type": ""}]
        res = seeds.gtest_results(report)
        self.assertEqual(res["SbqTest.V61LosesWakeupsOnInterruptInsideWakeUp"], "failed")
        self.assertEqual(res["SbqTest.V61LosesWakeupsOnNestedCompletionViaHook"], "passed")
        self.assertEqual(seeds.gtest_results({}), {})

    def test_suite(self):
        rows = seeds.analyze_suite(sample("suite.json"), {"BM_SbqGetClear/64": 211.0})
        self.assertEqual(rows["BM_SbqGetClear/64"]["median"], 15.0)
        self.assertEqual(rows["BM_SbqGetClear/64"]["fastest"], 14.0)
        self.assertEqual(rows["BM_SbqGetClear/64"]["ir"], 211.0)
        # real_time benchmarks are read from the wall clock
        self.assertEqual(rows["BM_PercpuRefGetPut/threads:2"]["median"], 1200.0)
        self.assertEqual(rows["BM_PercpuRefGetPut/threads:2"]["clock"], "real")
        # ns_per_op is an inverted rate, in seconds; items_per_second counts items
        self.assertAlmostEqual(rows["BM_WholePath_ukern_null/32"]["per_op"], 2100 / 32)
        self.assertAlmostEqual(rows["BM_PercpuRefGetPut/threads:2"]["per_op"], 12.0)
        self.assertIsNone(rows["BM_SbqGetClear/64"]["per_op"])


class PageTest(unittest.TestCase):
    def write(self, quick_key=None):
        data = {"seeds": {k: {"figures": v, "meta": meta(k == quick_key)}
                          for k, v in figures().items()},
                "suites": {"figures": {"sbitmap": seeds.analyze_suite(
                    sample("suite.json"), {})}, "meta": meta()}}
        tmp = tempfile.TemporaryDirectory()
        self.addCleanup(tmp.cleanup)
        seeds.write_pages(data, root=tmp.name, plots=HAVE_MPL)
        with open(os.path.join(tmp.name, seeds.RESULTS_MD)) as f:
            md = f.read()
        with open(os.path.join(tmp.name, seeds.BENCH_PAGE)) as f:
            page = f.read()
        return tmp.name, md, page

    def test_every_seed_has_a_section(self):
        _, md, _ = self.write()
        for s in seeds.SEEDS:
            self.assertIn(f"\n## {s.number}. {s.title}\n", md)
        s3 = section(md, 3)
        self.assertIn("| 2.6 before (retries on aio_wq, queue_work) | on | 249,369 | 82,970 |"
                      " 0.333 | 19,239 |", s3)
        self.assertIn("82,970/s → 365/s", s3)
        # the ctx->running guard: 0.864 in the sample, so that claim is not met
        self.assertIn("passes/s with / without 0.864 (0.864-0.864) | **not met** |", s3)

    def test_run_lines(self):
        _, md, _ = self.write()
        s4 = section(md, 4)
        self.assertIn("commit abc1234", s4)
        self.assertIn("2-vCPU VM", s4)
        self.assertIn("2026-01-01 12:00 UTC", s4)
        self.assertIn("UKERN_X=1 build/release/benchmarks/ukern_bench_radix "
                      "'--benchmark_filter=^radix/'", s4)

    def test_quick_is_marked(self):
        _, md, _ = self.write(quick_key="radix-iter")
        self.assertIn("**Quick run**", section(md, 4))
        self.assertNotIn("**Quick run**", section(md, 1))

    def test_verdicts(self):
        _, md, _ = self.write()
        s4 = section(md, 4)
        # tagged 0.8 .. 0.3 by step, falling: met; normal 0.9: met
        self.assertIn("| 16 | 1,000 | 300 | 0.30 | 13,000 | 3,900 | 0.30 | 3,561 → 513 | 0.14 |",
                      s4)
        self.assertNotIn("not met", s4)
        s1 = section(md, 1)
        self.assertIn("table / list 0.12, radix / list 0.15 | met", s1)
        self.assertIn("table / list 1.0100", s1)
        self.assertIn("| `aio-percpu` | 2 met, 1 not met | full | abc1234 |", md)
        self.assertIn("| `aio-retry` | 2 met, 2 not met | full |", md)
        s2 = section(md, 2)
        self.assertIn("submit only 1.0 %; whole cycle 33.0 % (host kernel: 7.0 %) | **not met**",
                      s2)
        s5 = section(md, 5)
        self.assertIn("timeouts: today 0, v6.1 8 | met", s5)
        self.assertIn("`V61LosesWakeupsOnNestedCompletionViaHook` passed", s5)
        self.assertIn("`BothSchemesWakeEveryoneWithoutNesting` passed | met |", s5)
        self.assertIn("| 16 | 16,000,000 | 14,400,000 | 0.900 (0.80-1.00) |", s5)
        self.assertIn("0.900-1.020 | **not met**", s5)

    def test_one_context_by_instructions(self):
        f = seeds.analyze_aio_table(sample("aio-contexts.json"), sample("aio-one.json"),
                                    {"list": 1000.0, "radix": 1100.0, "table": 1030.0})
        md = []
        seeds.render_aio_table(f, md, None)
        text = "\n".join(md)
        # the time ratio (1.01) would pass; the instruction ratio decides
        self.assertIn("table / list 1.0300 (the verdict) | **not met** |", text)

    def test_plots(self):
        if not HAVE_MPL:
            self.skipTest("python3-matplotlib is not installed")
        root, md, _ = self.write()
        for key in ("aio-table", "aio-percpu", "aio-retry", "radix-iter", "sbitmap-wake"):
            path = os.path.join(root, seeds.PLOT_DIR, f"{key}.png")
            with open(path, "rb") as f:
                self.assertEqual(f.read(8), b"\x89PNG\r\n\x1a\n")
            self.assertIn(f"(results/{key}.png)", md)

    def test_bench_page(self):
        _, _, page = self.write()
        self.assertLessEqual(len(page.splitlines()), 120)
        self.assertIn("tools/ukern seeds suites", page)
        self.assertIn("| after | 1,579,659 | 365 |", page)
        for suite in ("shim", "radix", "sbitmap", "nullb", "aio", "pipetest"):
            self.assertIn(f"\n## {suite}\n", page)
            self.assertIn(f"tools/ukern bench {suite}", page)
        self.assertIn("| `BM_SbqGetClear/64` | 15.0 | 14.0 | - | - |", page)
        self.assertIn("| tagged, step 16 | 1,000 | 300 | 0.30 | 0.30 |", page)

    def test_no_empty_data(self):
        tmp = tempfile.TemporaryDirectory()
        self.addCleanup(tmp.cleanup)
        seeds.write_pages({"seeds": {}}, root=tmp.name, plots=False)
        with open(os.path.join(tmp.name, seeds.RESULTS_MD)) as f:
            md = f.read()
        self.assertIn("No run recorded yet: `tools/ukern seeds radix-iter`.", md)


if __name__ == "__main__":
    unittest.main()
