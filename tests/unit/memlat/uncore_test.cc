// The memory controllers' PMUs found in a fake sysfs tree: none, a
// processor without a table entry, a PMU whose files are broken, and the
// paper's platform with the kernel's own clockticks description and the
// table's RPQ codes encoded by the PMU's format files.
#include "nabla/memlat/uncore.hh"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <variant>

namespace nabla::memlat {
namespace {

namespace fs = std::filesystem;

const char* const kSkylakeServer =
    "processor\t: 0\nvendor_id\t: GenuineIntel\ncpu family\t: 6\nmodel\t\t: 85\n\n";

class FakeImcSysfs : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("nabla-memlat-uncore-" + std::to_string(::getpid()));
    fs::create_directories(dir_ / "pmus" / "cpu");
    write("cpuinfo", kSkylakeServer);
  }
  void TearDown() override { fs::remove_all(dir_); }

  void write(const fs::path& relative, const std::string& text) {
    fs::create_directories((dir_ / relative).parent_path());
    std::ofstream((dir_ / relative).string()) << text;
  }
  // One channel as the kernel lays it out (arch/x86/events/intel/uncore).
  void add_channel(const std::string& name, int type, const std::string& clockticks) {
    const fs::path pmu = fs::path("pmus") / name;
    write(pmu / "type", std::to_string(type) + "\n");
    write(pmu / "cpumask", "0,28\n");
    write(pmu / "format" / "event", "config:0-7\n");
    write(pmu / "format" / "umask", "config:8-15\n");
    write(pmu / "events" / "clockticks", clockticks + "\n");
  }
  std::variant<ImcPmus, Unavailable> detect() {
    return detect_imc_pmus((dir_ / "pmus").string(), (dir_ / "cpuinfo").string());
  }
  std::string reason() {
    const auto r = detect();
    return std::holds_alternative<Unavailable>(r) ? std::get<Unavailable>(r).reason : "";
  }
  fs::path dir_;
};

TEST_F(FakeImcSysfs, NoImcPmuIsSaidInOneLine) {
  const std::string r = reason();
  EXPECT_EQ(r.rfind("no uncore iMC PMU (no ", 0), 0u) << r;
  EXPECT_EQ(r.find('\n'), std::string::npos);
}

TEST_F(FakeImcSysfs, SkylakeServerChannelsWithTheirConfigs) {
  add_channel("uncore_imc_1", 15, "event=0x00,umask=0x00");
  add_channel("uncore_imc_0", 14, "event=0xff");  // the fixed counter, as some kernels name it
  const auto found = detect();
  ASSERT_TRUE(std::holds_alternative<ImcPmus>(found)) << reason();
  const ImcPmus& pmus = std::get<ImcPmus>(found);
  EXPECT_EQ(pmus.microarch, "Intel Skylake-SP / Cascade Lake-SP");
  ASSERT_EQ(pmus.pmus.size(), 2u);
  EXPECT_EQ(pmus.pmus[0].name, "uncore_imc_0");  // sorted
  EXPECT_EQ(pmus.pmus[0].type, 14);
  EXPECT_EQ(pmus.pmus[0].cpus, (std::vector<int>{0, 28}));
  EXPECT_EQ(pmus.pmus[0].clockticks, 0xffu);  // the kernel's description wins
  EXPECT_EQ(pmus.pmus[1].clockticks, 0x00u);
  EXPECT_EQ(pmus.pmus[1].rpq_inserts, 0x10u);
  EXPECT_EQ(pmus.pmus[1].rpq_occupancy, 0x80u);
}

TEST_F(FakeImcSysfs, ProcessorWithoutATableEntryIsNamed) {
  add_channel("uncore_imc_0", 14, "event=0x00,umask=0x00");
  write("cpuinfo", "vendor_id\t: GenuineIntel\ncpu family\t: 6\nmodel\t\t: 158\n\n");
  const std::string r = reason();
  EXPECT_EQ(r.rfind("no uncore iMC event table for GenuineIntel family 0x6 model 0x9e", 0), 0u)
      << r;
}

TEST_F(FakeImcSysfs, BrokenPmuFilesNameThePmu) {
  add_channel("uncore_imc_0", 14, "event=0x00,umask=0x00");
  fs::remove(dir_ / "pmus" / "uncore_imc_0" / "format" / "umask");
  std::string r = reason();
  EXPECT_EQ(r.rfind("uncore iMC PMU uncore_imc_0: no format for 'umask'", 0), 0u) << r;
  fs::remove(dir_ / "pmus" / "uncore_imc_0" / "type");
  r = reason();
  EXPECT_EQ(r.rfind("uncore iMC PMU uncore_imc_0: no type file", 0), 0u) << r;
}

TEST_F(FakeImcSysfs, FormatsWithSeveralRangesSpreadTheBits) {
  write("fmt/umask", "config:8-15,32-35\n");
  write("fmt/event", "config:0-7\n");
  write("fmt/edge", "config:18\n");
  write("fmt/thresh", "config1:0-7\n");
  const std::string fmt = (dir_ / "fmt").string();
  EXPECT_EQ(encode_config(fmt, {{"event", 0x10}, {"umask", 0x3ff}}),
            0x10u | (0xffu << 8) | (0x3ull << 32));
  EXPECT_EQ(encode_config(fmt, parse_event_terms("event=0x04,umask=0x03,edge")),
            0x04u | (0x03u << 8) | (1u << 18));
  EXPECT_THROW(encode_config(fmt, {{"event", 0x100}}), std::invalid_argument);  // 9 bits
  EXPECT_THROW(encode_config(fmt, {{"thresh", 1}}), std::invalid_argument);     // not config
  EXPECT_THROW(encode_config(fmt, {{"cmask", 1}}), std::invalid_argument);      // no format
}

TEST(MemlatUncore, CpuListsAndMasks) {
  EXPECT_EQ(parse_cpu_list("0,28\n"), (std::vector<int>{0, 28}));
  EXPECT_EQ(parse_cpu_list("0-3,8"), (std::vector<int>{0, 1, 2, 3, 8}));
  EXPECT_TRUE(parse_cpu_list("").empty());
}

}  // namespace
}  // namespace nabla::memlat
