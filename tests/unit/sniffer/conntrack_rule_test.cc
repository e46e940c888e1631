// The value of nf_conntrack_acct a crashed sniffer's chain records for the
// next sniffer to restore (sniffer/conntrack_rule.hh): read from `iptables
// -S` output as iptables prints the rule.
#include "nabla/sniffer/conntrack_rule.hh"

#include <gtest/gtest.h>

#include <string>

namespace nabla::sniffer {
namespace {

TEST(ConntrackRule, TheRecordedValueIsReadBackFromItsChainOnly) {
  const std::string rules =
      "-P INPUT ACCEPT\n"
      "-N nabla-sniffd-4711\n"
      "-N nabla-sniffd-4712\n"
      "-A nabla-sniffd-4711 -m conntrack --ctstate NEW -m comment --comment \"nabla-sniffd "
      "keeps conntrack on\" -j RETURN\n"
      "-A nabla-sniffd-4711 -m comment --comment \"" +
      acct_restore_comment("0") +
      "\" -j RETURN\n"
      "-A nabla-sniffd-4712 -m comment --comment \"" +
      acct_restore_comment("1") + "\" -j RETURN\n";
  EXPECT_EQ(acct_to_restore(rules, "nabla-sniffd-4711"), "0");
  EXPECT_EQ(acct_to_restore(rules, "nabla-sniffd-4712"), "1");
  EXPECT_EQ(acct_to_restore(rules, "nabla-sniffd-471"), std::nullopt);  // a prefix is not it
  EXPECT_EQ(acct_to_restore(rules, "nabla-sniffd-9"), std::nullopt);
  // Anything but a short run of digits is never written to the sysctl.
  EXPECT_EQ(
      acct_to_restore("-A c -m comment --comment \"" + acct_restore_comment("x;rm") + "\"", "c"),
      std::nullopt);
  EXPECT_EQ(
      acct_to_restore("-A c -m comment --comment \"" + acct_restore_comment("12345") + "\"", "c"),
      std::nullopt);
}

}  // namespace
}  // namespace nabla::sniffer
