// The coordinator's summary of a served run: the lines for leases that came
// back without a result (lost to the infrastructure, declined by a board
// that was not Good) appear only when there were such leases, each with its
// own count.
#include <gtest/gtest.h>

#include <sstream>
#include <string>

#include "coordinator/fleet/fleet_run.h"
#include "coordinator/fleet/unit_run.h"

namespace torq::coordinator {
namespace {

std::string summary(size_t infra, size_t declined) {
  ServeTotals t;
  t.done_jobs = t.fleet_jobs = 42;
  t.by_status[pipeline::Status::kSuccess] = 42;
  t.fleet.infra_requeued = infra;
  t.fleet.declined = declined;
  std::ostringstream out;
  print_serve_totals(t, 1.0, out);
  return out.str();
}

TEST(ServeTotals, LostAndDeclinedLeasesHaveTheirOwnLinesWhenThereAreAny) {
  const std::string both = summary(1, 2);
  EXPECT_NE(both.find("infra     1 jobs lost to infrastructure errors, requeued (not attempts)\n"), std::string::npos)
      << both;
  EXPECT_NE(both.find("declined  2 leases given back unrun (a board not Good, or its lanes kept busy), requeued (not attempts)\n"),
            std::string::npos)
      << both;
  const std::string none = summary(0, 0);
  EXPECT_EQ(none.find("infra "), std::string::npos) << none;
  EXPECT_EQ(none.find("declined "), std::string::npos) << none;
  EXPECT_NE(none.find("jobs      42 finished: 42 run on the fleet"), std::string::npos) << none;
}

}  // namespace
}  // namespace torq::coordinator
