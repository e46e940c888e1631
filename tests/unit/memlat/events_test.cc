// The counter table per processor, and why counters are unavailable, from a
// fake sysfs PMU directory and cpuinfo text.
#include "nabla/memlat/events.hh"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <variant>

#include "nabla/memlat/counters.hh"

namespace nabla::memlat {
namespace {

namespace fs = std::filesystem;

std::string cpuinfo(const std::string& vendor, int family, int model) {
  return "processor\t: 0\nvendor_id\t: " + vendor + "\ncpu family\t: " + std::to_string(family) +
         "\nmodel\t\t: " + std::to_string(model) + "\nmodel name\t: Some CPU @ 2.10GHz\n\n" +
         "processor\t: 1\nvendor_id\t: Other\n";
}

TEST(MemlatEvents, CpuinfoFirstProcessorOnly) {
  const CpuId id = parse_cpuinfo(cpuinfo("GenuineIntel", 6, 85));
  EXPECT_EQ(id.vendor, "GenuineIntel");
  EXPECT_EQ(id.family, 6);
  EXPECT_EQ(id.model, 85);
}

TEST(MemlatEvents, SkylakeServerUsesThePapersEvents) {
  const auto t = event_table_for({"GenuineIntel", 6, 0x55});
  ASSERT_TRUE(t.has_value());
  EXPECT_EQ(t->outstanding.name, "OFFCORE_REQUESTS_OUTSTANDING.L3_MISS_DEMAND_DATA_RD");
  EXPECT_EQ(t->outstanding.config, 0x1060u);
  EXPECT_EQ(t->requests.name, "OFFCORE_REQUESTS.L3_MISS_DEMAND_DATA_RD");
  EXPECT_EQ(t->requests.config, 0x10B0u);
  EXPECT_EQ(t->ref_cycles.name, "CPU_CLK_UNHALTED.REF_TSC");
  EXPECT_TRUE(t->per_thread);
  EXPECT_DOUBLE_EQ(t->outstanding_scale, 1);
  EXPECT_FALSE(t->source.empty());
}

TEST(MemlatEvents, ZenUsesTheL3LatencyEvents) {
  const auto zen2 = event_table_for({"AuthenticAMD", 0x17, 0x31});
  const auto zen4 = event_table_for({"AuthenticAMD", 0x19, 0x11});
  ASSERT_TRUE(zen2 && zen4);
  EXPECT_EQ(zen2->outstanding.pmu, "amd_l3");
  EXPECT_DOUBLE_EQ(zen2->outstanding_scale, 16);
  EXPECT_EQ(zen4->outstanding.config, 0x3FACu);
  EXPECT_DOUBLE_EQ(zen4->outstanding_scale, 10);
  EXPECT_FALSE(zen4->per_thread);
  EXPECT_FALSE(event_table_for({"GenuineIntel", 6, 0x9E}).has_value());  // a client part
  EXPECT_FALSE(event_table_for({"AuthenticAMD", 0x15, 0x02}).has_value());
}

class FakeSysfs : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("nabla-memlat-events-" + std::to_string(::getpid()));
    fs::create_directories(dir_ / "pmus");
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string write_cpuinfo(const std::string& text) {
    const std::string path = (dir_ / "cpuinfo").string();
    std::ofstream(path) << text;
    return path;
  }
  std::string reason(const std::string& cpuinfo_text) {
    const auto r = detect_event_table((dir_ / "pmus").string(), write_cpuinfo(cpuinfo_text));
    return std::holds_alternative<Unavailable>(r) ? std::get<Unavailable>(r).reason : "";
  }
  fs::path dir_;
};

TEST_F(FakeSysfs, NoCorePmuIsNamedFirst) {
  EXPECT_EQ(reason(cpuinfo("GenuineIntel", 6, 0x55)).rfind("no PMU exposed", 0), 0u);
}

TEST_F(FakeSysfs, UnknownProcessorIsAMissingEvent) {
  fs::create_directories(dir_ / "pmus" / "cpu");
  const std::string r = reason(cpuinfo("GenuineIntel", 6, 0x9E));
  EXPECT_EQ(r.rfind("missing event: no counter table for GenuineIntel family 0x6 model 0x9e", 0),
            0u)
      << r;
}

TEST_F(FakeSysfs, ZenWithoutTheL3PmuIsAMissingEvent) {
  fs::create_directories(dir_ / "pmus" / "cpu");
  fs::create_directories(dir_ / "pmus" / "msr");
  std::ofstream((dir_ / "pmus" / "msr" / "type").string()) << "9\n";
  const std::string r = reason(cpuinfo("AuthenticAMD", 0x19, 0x11));
  EXPECT_NE(r.find("amd_l3"), std::string::npos) << r;
  EXPECT_EQ(r.rfind("missing event", 0), 0u) << r;
  fs::create_directories(dir_ / "pmus" / "amd_l3");
  std::ofstream((dir_ / "pmus" / "amd_l3" / "type").string()) << "11\n";
  EXPECT_EQ(reason(cpuinfo("AuthenticAMD", 0x19, 0x11)), "");
}

}  // namespace
}  // namespace nabla::memlat
