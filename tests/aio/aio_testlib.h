// SPDX-License-Identifier: GPL-2.0-only
// The fixture the aio test binaries share: every test starts and ends with
// no live contexts or requests of its own, no percpu bytes leaked, aio_nr
// back at zero and the before/after switches at their defaults.
#ifndef UKERN_TESTS_AIO_AIO_TESTLIB_H_
#define UKERN_TESTS_AIO_AIO_TESTLIB_H_

#include <gtest/gtest.h>

#include <uk/linux/aio.h>
#include <uk/linux/percpu.h>

class AioTest : public ::testing::Test
{
      protected:
	void SetUp() override
	{
		uk::aio::quiesce();
		live_ctx_ = uk::aio::nr_live_ctx();
		pcpu_ = uk::percpu_bytes_in_use();
	}
	void TearDown() override
	{
		uk::aio::quiesce();
		EXPECT_EQ(uk::aio::nr_live_ctx(), live_ctx_);
		EXPECT_EQ(uk::aio::nr_live_reqs(), 0);
		EXPECT_EQ(uk::percpu_bytes_in_use(), pcpu_);
		EXPECT_EQ(aio_nr, 0UL);
		uk::aio::aio_lookup_mode = uk::aio::LookupMode::kTable;
		uk::aio::aio_reqs_mode = uk::aio::ReqsMode::kPercpu;
		uk::aio::aio_ref_mode = uk::aio::RefMode::kPercpu;
		uk::aio::aio_submit_mode = uk::aio::SubmitMode::kDirect;
	}
	long live_ctx_ = 0;
	size_t pcpu_ = 0;
};

#endif // UKERN_TESTS_AIO_AIO_TESTLIB_H_
