// Testbed spec parsing (no namespaces: pure).
#include <gtest/gtest.h>

#include <stdexcept>
#include <string>

#include "nabla/testbed/testbed.hh"

namespace nabla::coordinator {
namespace {

std::string error_of(const std::string& toml) {
  try {
    testbed::parse_testbed_spec(toml);
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "no error";
}

TEST(TestbedSpec, HostsProcessesAndAddressSubstitution) {
  const testbed::TestbedSpec s = testbed::parse_testbed_spec(R"(
subnet = "10.9.8.0/24"
[[host]]
name = "web"
[[host.process]]
argv = ["nabla-tier", "--listen", "{web}:9001", "--tier", "app={app}:9002"]
output = "/tmp/w.log"
[[host]]
name = "app"
)");
  ASSERT_EQ(s.hosts.size(), 2u);
  EXPECT_EQ(s.hosts[0].name, "web");
  ASSERT_EQ(s.hosts[0].processes.size(), 1u);
  const auto& argv = s.hosts[0].processes[0].argv;
  EXPECT_EQ(argv[2], "10.9.8.1:9001");
  EXPECT_EQ(argv[4], "app=10.9.8.2:9002");
  EXPECT_EQ(s.hosts[0].processes[0].output, "/tmp/w.log");
  EXPECT_TRUE(s.hosts[1].processes.empty());
}

TEST(TestbedSpec, DefaultSubnetAndAddresses) {
  const testbed::TestbedSpec s = testbed::parse_testbed_spec("[[host]]\nname = \"a\"\n");
  EXPECT_EQ(s.subnet, "10.213.0.0/24");
  EXPECT_EQ(testbed::testbed_host_address(s.subnet, 0), "10.213.0.1");
  EXPECT_EQ(testbed::testbed_host_address("10.1.2.77/24", 9), "10.1.2.10");
  EXPECT_THROW(testbed::testbed_host_address("10.1.2.0/16", 0), std::invalid_argument);
  EXPECT_THROW(testbed::testbed_host_address("10.1.2.0/24", 200), std::invalid_argument);
}

TEST(TestbedSpec, ErrorsNameTheField) {
  EXPECT_NE(error_of("").find("at least one"), std::string::npos);
  EXPECT_NE(error_of("[[host]]\nname = \"Web!\"\n").find("host[0].name"), std::string::npos);
  EXPECT_NE(error_of("[[host]]\nname = \"a\"\n[[host]]\nname = \"a\"\n").find("twice"),
            std::string::npos);
  EXPECT_NE(error_of("subnet = \"10.0.0.0/8\"\n[[host]]\nname = \"a\"\n").find("subnet"),
            std::string::npos);
  EXPECT_NE(error_of("[[host]]\nname = \"a\"\n[[host.process]]\nargv = []\n")
                .find("host[0].process[0].argv"),
            std::string::npos);
  EXPECT_NE(error_of("hosts = 1\n").find("unknown key 'hosts'"), std::string::npos);
  EXPECT_NE(error_of("[[host]\n").find("line 1"), std::string::npos);
}

}  // namespace
}  // namespace nabla::coordinator
