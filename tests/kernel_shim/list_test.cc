// SPDX-License-Identifier: GPL-2.0-only
// list.h (list_head and hlist) and rculist.h.
#include <gtest/gtest.h>

#include <atomic>
#include <thread>
#include <vector>

#include <uk/linux/list.h>
#include <uk/linux/rculist.h>

#include "testmain.h"

namespace {

struct Item {
  int val;
  struct list_head node;
  struct hlist_node hnode;
};

std::vector<int> Values(struct list_head *head) {
  std::vector<int> v;
  Item *it;
  list_for_each_entry(it, head, node) v.push_back(it->val);
  return v;
}

std::vector<int> ValuesReverse(struct list_head *head) {
  std::vector<int> v;
  Item *it;
  list_for_each_entry_reverse(it, head, node) v.push_back(it->val);
  return v;
}

// Checks next/prev consistency of a whole ring.
void CheckRing(struct list_head *head) {
  struct list_head *p = head;
  size_t n = 0;
  do {
    ASSERT_EQ(p->next->prev, p);
    ASSERT_EQ(p->prev->next, p);
    p = p->next;
    ASSERT_LT(n++, 100000u);
  } while (p != head);
}

using V = std::vector<int>;

class ListTest : public ::testing::Test {
 protected:
  Item items[8];
  void SetUp() override {
    for (int i = 0; i < 8; i++) {
      items[i].val = i;
      INIT_LIST_HEAD(&items[i].node);
      INIT_HLIST_NODE(&items[i].hnode);
    }
  }
};

TEST_F(ListTest, AddAddTailDel) {
  LIST_HEAD(head);
  EXPECT_TRUE(list_empty(&head));
  EXPECT_TRUE(list_empty_careful(&head));
  EXPECT_FALSE(list_is_singular(&head));
  list_add(&items[1].node, &head);
  EXPECT_TRUE(list_is_singular(&head));
  list_add(&items[0].node, &head);
  list_add_tail(&items[2].node, &head);
  list_add_tail(&items[3].node, &head);
  EXPECT_FALSE(list_is_singular(&head));
  EXPECT_EQ(Values(&head), (V{0, 1, 2, 3}));
  EXPECT_EQ(ValuesReverse(&head), (V{3, 2, 1, 0}));
  CheckRing(&head);
  EXPECT_TRUE(list_is_first(&items[0].node, &head));
  EXPECT_TRUE(list_is_last(&items[3].node, &head));
  EXPECT_FALSE(list_is_last(&items[2].node, &head));
  EXPECT_EQ(list_first_entry(&head, Item, node), &items[0]);
  EXPECT_EQ(list_last_entry(&head, Item, node), &items[3]);
  EXPECT_EQ(list_next_entry(&items[1], node), &items[2]);
  EXPECT_EQ(list_prev_entry(&items[1], node), &items[0]);
  EXPECT_EQ(list_count_nodes(&head), 4u);

  list_del(&items[1].node);
  EXPECT_EQ(items[1].node.next, (struct list_head *)LIST_POISON1);
  EXPECT_EQ(items[1].node.prev, (struct list_head *)LIST_POISON2);
  EXPECT_EQ(Values(&head), (V{0, 2, 3}));
  list_del_init(&items[2].node);
  EXPECT_TRUE(list_empty(&items[2].node));
  EXPECT_EQ(Values(&head), (V{0, 3}));
  CheckRing(&head);
  list_del(&items[0].node);
  list_del(&items[3].node);
  EXPECT_TRUE(list_empty(&head));
  EXPECT_EQ(list_count_nodes(&head), 0u);
}

TEST_F(ListTest, FirstEntryOrNull) {
  LIST_HEAD(head);
  EXPECT_EQ(list_first_entry_or_null(&head, Item, node), nullptr);
  list_add_tail(&items[5].node, &head);
  list_add_tail(&items[6].node, &head);
  EXPECT_EQ(list_first_entry_or_null(&head, Item, node), &items[5]);
}

TEST_F(ListTest, MoveAndMoveTail) {
  LIST_HEAD(a);
  LIST_HEAD(b);
  for (int i = 0; i < 4; i++) list_add_tail(&items[i].node, &a);
  list_move(&items[2].node, &b);
  list_move(&items[0].node, &b);
  EXPECT_EQ(Values(&a), (V{1, 3}));
  EXPECT_EQ(Values(&b), (V{0, 2}));
  list_move_tail(&items[1].node, &b);
  EXPECT_EQ(Values(&a), (V{3}));
  EXPECT_EQ(Values(&b), (V{0, 2, 1}));
  list_move_tail(&items[0].node, &b);  // within the same list
  EXPECT_EQ(Values(&b), (V{2, 1, 0}));
  CheckRing(&a);
  CheckRing(&b);
}

TEST_F(ListTest, Splice) {
  LIST_HEAD(a);
  LIST_HEAD(b);
  LIST_HEAD(empty);
  for (int i = 0; i < 3; i++) list_add_tail(&items[i].node, &a);
  for (int i = 3; i < 6; i++) list_add_tail(&items[i].node, &b);
  list_splice(&empty, &a);  // no-op
  EXPECT_EQ(Values(&a), (V{0, 1, 2}));
  list_splice_init(&b, &a);
  EXPECT_EQ(Values(&a), (V{3, 4, 5, 0, 1, 2}));
  EXPECT_TRUE(list_empty(&b));
  CheckRing(&a);
  // splice_tail_init moves them back to the end of b
  list_splice_tail_init(&a, &b);
  EXPECT_TRUE(list_empty(&a));
  EXPECT_EQ(Values(&b), (V{3, 4, 5, 0, 1, 2}));
  list_add_tail(&items[6].node, &a);
  list_splice_tail_init(&b, &a);
  EXPECT_EQ(Values(&a), (V{6, 3, 4, 5, 0, 1, 2}));
  CheckRing(&a);
  // plain list_splice/list_splice_tail leave the source head stale
  LIST_HEAD(c);
  list_add(&items[7].node, &c);
  list_splice_tail(&c, &a);
  EXPECT_EQ(Values(&a), (V{6, 3, 4, 5, 0, 1, 2, 7}));
  CheckRing(&a);
}

TEST_F(ListTest, CutPosition) {
  LIST_HEAD(head);
  LIST_HEAD(cut);
  for (int i = 0; i < 5; i++) list_add_tail(&items[i].node, &head);
  list_cut_position(&cut, &head, &items[2].node);
  EXPECT_EQ(Values(&cut), (V{0, 1, 2}));
  EXPECT_EQ(Values(&head), (V{3, 4}));
  CheckRing(&cut);
  CheckRing(&head);
  // cutting at the head itself gives an empty list
  LIST_HEAD(none);
  list_cut_position(&none, &head, &head);
  EXPECT_TRUE(list_empty(&none));
  EXPECT_EQ(Values(&head), (V{3, 4}));
  // cutting everything
  LIST_HEAD(all);
  list_cut_position(&all, &head, &items[4].node);
  EXPECT_TRUE(list_empty(&head));
  EXPECT_EQ(Values(&all), (V{3, 4}));
  // an empty source is left alone
  LIST_HEAD(e);
  list_cut_position(&e, &head, &head);
  EXPECT_TRUE(list_empty(&e));
}

TEST_F(ListTest, ReplaceAndRotate) {
  LIST_HEAD(head);
  for (int i = 0; i < 4; i++) list_add_tail(&items[i].node, &head);
  list_replace(&items[1].node, &items[5].node);
  EXPECT_EQ(Values(&head), (V{0, 5, 2, 3}));
  list_replace_init(&items[2].node, &items[6].node);
  EXPECT_EQ(Values(&head), (V{0, 5, 6, 3}));
  EXPECT_TRUE(list_empty(&items[2].node));
  CheckRing(&head);
  list_rotate_left(&head);
  EXPECT_EQ(Values(&head), (V{5, 6, 3, 0}));
  list_rotate_left(&head);
  EXPECT_EQ(Values(&head), (V{6, 3, 0, 5}));
  CheckRing(&head);
  LIST_HEAD(empty);
  list_rotate_left(&empty);
  EXPECT_TRUE(list_empty(&empty));
}

TEST_F(ListTest, SwapBulkMoveAndRotateToFront) {
  LIST_HEAD(head);
  for (int i = 0; i < 5; i++) list_add_tail(&items[i].node, &head);
  list_swap(&items[1].node, &items[3].node);
  EXPECT_EQ(Values(&head), (V{0, 3, 2, 1, 4}));
  // Neighbours too.
  list_swap(&items[2].node, &items[1].node);
  EXPECT_EQ(Values(&head), (V{0, 3, 1, 2, 4}));
  CheckRing(&head);
  // Across two lists.
  LIST_HEAD(other);
  list_add_tail(&items[6].node, &other);
  list_swap(&items[0].node, &items[6].node);
  EXPECT_EQ(Values(&head), (V{6, 3, 1, 2, 4}));
  EXPECT_EQ(Values(&other), (V{0}));

  // 3 1 2 to the tail of other.
  list_bulk_move_tail(&other, &items[3].node, &items[2].node);
  EXPECT_EQ(Values(&head), (V{6, 4}));
  EXPECT_EQ(Values(&other), (V{0, 3, 1, 2}));
  CheckRing(&head);
  CheckRing(&other);

  list_rotate_to_front(&items[1].node, &other);
  EXPECT_EQ(Values(&other), (V{1, 2, 0, 3}));
  CheckRing(&other);
}

TEST_F(ListTest, CutBeforeAndDelVariants) {
  LIST_HEAD(head);
  LIST_HEAD(cut);
  for (int i = 0; i < 5; i++) list_add_tail(&items[i].node, &head);
  list_cut_before(&cut, &head, &items[3].node);
  EXPECT_EQ(Values(&cut), (V{0, 1, 2}));
  EXPECT_EQ(Values(&head), (V{3, 4}));
  CheckRing(&cut);
  CheckRing(&head);
  // Cutting before the first entry leaves @list empty.
  LIST_HEAD(none);
  list_cut_before(&none, &head, &items[3].node);
  EXPECT_TRUE(list_empty(&none));
  EXPECT_EQ(Values(&head), (V{3, 4}));
  // Cutting before the head moves everything.
  LIST_HEAD(all);
  list_cut_before(&all, &head, &head);
  EXPECT_TRUE(list_empty(&head));
  EXPECT_EQ(Values(&all), (V{3, 4}));

  list_del_init_careful(&items[3].node);
  EXPECT_TRUE(list_empty_careful(&items[3].node));
  EXPECT_EQ(Values(&all), (V{4}));
  __list_del_clearprev(&items[4].node);
  EXPECT_EQ(items[4].node.prev, nullptr);
  EXPECT_TRUE(list_empty(&all));
}

TEST_F(ListTest, IterationForms) {
  LIST_HEAD(head);
  for (int i = 0; i < 6; i++) list_add_tail(&items[i].node, &head);
  // _safe: deleting the current entry while walking
  Item *pos, *n;
  list_for_each_entry_safe(pos, n, &head, node) {
    if (pos->val % 2) list_del(&pos->node);
  }
  EXPECT_EQ(Values(&head), (V{0, 2, 4}));
  V rev;
  list_for_each_entry_safe_reverse(pos, n, &head, node) {
    rev.push_back(pos->val);
    if (pos->val == 2) list_del_init(&pos->node);
  }
  EXPECT_EQ(rev, (V{4, 2, 0}));
  EXPECT_EQ(Values(&head), (V{0, 4}));
  list_add(&items[2].node, &items[0].node);  // after 0
  // _continue starts after pos; _from starts at pos
  V cont, from;
  pos = &items[0];
  list_for_each_entry_continue(pos, &head, node) cont.push_back(pos->val);
  EXPECT_EQ(cont, (V{2, 4}));
  pos = &items[2];
  list_for_each_entry_from(pos, &head, node) from.push_back(pos->val);
  EXPECT_EQ(from, (V{2, 4}));
  // raw forms
  struct list_head *p, *q;
  int count = 0;
  list_for_each(p, &head) count++;
  EXPECT_EQ(count, 3);
  V back;
  list_for_each_prev(p, &head) back.push_back(list_entry(p, Item, node)->val);
  EXPECT_EQ(back, (V{4, 2, 0}));
  list_for_each_safe(p, q, &head) list_del_init(p);
  EXPECT_TRUE(list_empty(&head));
}

TEST_F(ListTest, Hlist) {
  HLIST_HEAD(h);
  EXPECT_TRUE(hlist_empty(&h));
  EXPECT_TRUE(hlist_unhashed(&items[0].hnode));
  hlist_add_head(&items[0].hnode, &h);
  hlist_add_head(&items[1].hnode, &h);
  EXPECT_FALSE(hlist_unhashed(&items[0].hnode));
  EXPECT_FALSE(hlist_unhashed_lockless(&items[0].hnode));
  hlist_add_before(&items[2].hnode, &items[0].hnode);  // 1 2 0
  hlist_add_behind(&items[3].hnode, &items[0].hnode);  // 1 2 0 3
  hlist_add_behind(&items[4].hnode, &items[1].hnode);  // 1 4 2 0 3
  hlist_add_before(&items[5].hnode,
                   &items[1].hnode);  // 5 1 4 2 0 3 (new first)
  auto values = [&] {
    V v;
    Item *it;
    hlist_for_each_entry(it, &h, hnode) v.push_back(it->val);
    return v;
  };
  EXPECT_EQ(values(), (V{5, 1, 4, 2, 0, 3}));
  // pprev consistency
  struct hlist_node **pp = &h.first;
  for (struct hlist_node *n = h.first; n; n = n->next) {
    ASSERT_EQ(n->pprev, pp);
    pp = &n->next;
  }
  hlist_del(&items[4].hnode);
  EXPECT_EQ(items[4].hnode.next, (struct hlist_node *)LIST_POISON1);
  hlist_del_init(&items[5].hnode);  // the first one
  EXPECT_TRUE(hlist_unhashed(&items[5].hnode));
  hlist_del_init(&items[5].hnode);  // twice is fine
  hlist_del(&items[3].hnode);       // the last one
  EXPECT_EQ(values(), (V{1, 2, 0}));
  Item *pos;
  struct hlist_node *tmp;
  hlist_for_each_entry_safe(pos, tmp, &h, hnode) hlist_del_init(&pos->hnode);
  EXPECT_TRUE(hlist_empty(&h));
  struct hlist_node *raw;
  int count = 0;
  hlist_for_each(raw, &h) count++;
  EXPECT_EQ(count, 0);
}

TEST_F(ListTest, HlistFakeMoveSpliceCount) {
  hlist_add_fake(&items[0].hnode);
  EXPECT_TRUE(hlist_fake(&items[0].hnode));
  EXPECT_FALSE(hlist_unhashed(&items[0].hnode));
  // hlist_del() of a fake node touches nothing else.
  hlist_del_init(&items[0].hnode);
  EXPECT_FALSE(hlist_fake(&items[0].hnode));

  HLIST_HEAD(a);
  HLIST_HEAD(b);
  EXPECT_EQ(hlist_count_nodes(&a), 0u);
  hlist_add_head(&items[1].hnode, &a);
  EXPECT_TRUE(hlist_is_singular_node(&items[1].hnode, &a));
  hlist_add_head(&items[2].hnode, &a);  // 2 1
  EXPECT_FALSE(hlist_is_singular_node(&items[1].hnode, &a));
  EXPECT_EQ(hlist_count_nodes(&a), 2u);

  hlist_move_list(&a, &b);
  EXPECT_TRUE(hlist_empty(&a));
  EXPECT_EQ(hlist_count_nodes(&b), 2u);
  EXPECT_EQ(b.first->pprev, &b.first);
  // Moving an empty list empties the target.
  HLIST_HEAD(c);
  hlist_add_head(&items[6].hnode, &c);
  hlist_move_list(&a, &c);
  EXPECT_TRUE(hlist_empty(&c));

  // a: 4 3; splice it in front of b: 4 3 2 1.
  hlist_add_head(&items[3].hnode, &a);
  hlist_add_head(&items[4].hnode, &a);
  hlist_splice_init(&a, &items[3].hnode, &b);
  EXPECT_TRUE(hlist_empty(&a));
  V v;
  Item *it;
  hlist_for_each_entry(it, &b, hnode) v.push_back(it->val);
  EXPECT_EQ(v, (V{4, 3, 2, 1}));
  struct hlist_node **pp = &b.first;
  for (struct hlist_node *n = b.first; n; n = n->next) {
    ASSERT_EQ(n->pprev, pp);
    pp = &n->next;
  }
  EXPECT_EQ(hlist_count_nodes(&b), 4u);
}

TEST_F(ListTest, RcuListSingleThreaded) {
  LIST_HEAD(head);
  INIT_LIST_HEAD_RCU(&head);
  list_add_rcu(&items[1].node, &head);
  list_add_rcu(&items[0].node, &head);
  list_add_tail_rcu(&items[2].node, &head);
  EXPECT_EQ(Values(&head), (V{0, 1, 2}));
  CheckRing(&head);
  V seen;
  Item *it;
  list_for_each_entry_rcu(it, &head, node) seen.push_back(it->val);
  EXPECT_EQ(seen, (V{0, 1, 2}));
  EXPECT_EQ(list_first_or_null_rcu(&head, Item, node), &items[0]);
  list_replace_rcu(&items[1].node, &items[4].node);
  EXPECT_EQ(Values(&head), (V{0, 4, 2}));
  EXPECT_EQ(items[1].node.prev, (struct list_head *)LIST_POISON2);
  list_del_rcu(&items[0].node);
  // A reader that was on the deleted entry can still move on.
  EXPECT_EQ(items[0].node.next, &items[4].node);
  EXPECT_EQ(items[0].node.prev, (struct list_head *)LIST_POISON2);
  EXPECT_EQ(Values(&head), (V{4, 2}));
  list_del_rcu(&items[4].node);
  list_del_rcu(&items[2].node);
  EXPECT_EQ(list_first_or_null_rcu(&head, Item, node), nullptr);

  HLIST_HEAD(h);
  hlist_add_head_rcu(&items[5].hnode, &h);
  hlist_add_head_rcu(&items[6].hnode, &h);
  V hs;
  hlist_for_each_entry_rcu(it, &h, hnode) hs.push_back(it->val);
  EXPECT_EQ(hs, (V{6, 5}));
  EXPECT_EQ(items[5].hnode.pprev, &items[6].hnode.next);
  hlist_del_rcu(&items[6].hnode);
  EXPECT_EQ(items[6].hnode.pprev, (struct hlist_node **)LIST_POISON2);
  EXPECT_EQ(items[6].hnode.next, &items[5].hnode);  // readers can move on
  hlist_del_init_rcu(&items[5].hnode);
  EXPECT_TRUE(hlist_unhashed(&items[5].hnode));
  EXPECT_TRUE(hlist_empty(&h));
}

TEST_F(ListTest, RcuReadersWalkWhileWriterAdds) {
  // One writer publishes nodes with list_add_tail_rcu()/hlist_add_head_rcu();
  // readers walk concurrently. Nothing is deleted, so no grace period is
  // needed. Every node a reader reaches must be fully initialised (its
  // payload was written before publication), the walk must end at the head,
  // and values must appear in insertion order. TSan checks the publication.
  const int kNodes = 3000;
  struct Node {
    long payload;
    long payload2;
    struct list_head node;
    struct hlist_node hnode;
  };
  std::vector<Node> nodes(kNodes);
  LIST_HEAD(head);
  HLIST_HEAD(hhead);
  std::atomic<bool> done{false};
  std::atomic<long> bad{0}, walks{0};
  const unsigned readers =
      uk::testing::StressThreads() > 2 ? uk::testing::StressThreads() - 1 : 1;
  std::vector<std::thread> ts;
  for (unsigned r = 0; r < readers; r++) {
    ts.emplace_back([&] {
      bool last = false;
      while (!last) {
        last = done.load(std::memory_order_acquire);
        long prev = -1, count = 0;
        Node *pos;
        list_for_each_entry_rcu(pos, &head, node) {
          if (pos->payload != prev + 1 || pos->payload2 != pos->payload * 7)
            bad++;
          prev = pos->payload;
          count++;
        }
        long hprev = kNodes;
        hlist_for_each_entry_rcu(pos, &hhead, hnode) {
          if (pos->payload >= hprev || pos->payload2 != pos->payload * 7) bad++;
          hprev = pos->payload;
        }
        if (last && count != kNodes) bad++;
        walks++;
        std::this_thread::yield();
      }
    });
  }
  for (int i = 0; i < kNodes; i++) {
    nodes[i].payload = i;
    nodes[i].payload2 = 7L * i;
    list_add_tail_rcu(&nodes[i].node, &head);
    hlist_add_head_rcu(&nodes[i].hnode, &hhead);
    if (i % 64 == 0) std::this_thread::yield();
  }
  done.store(true, std::memory_order_release);
  for (auto &t : ts) t.join();
  EXPECT_EQ(bad.load(), 0);
  EXPECT_GE(walks.load(), static_cast<long>(readers));
  EXPECT_EQ(list_count_nodes(&head), static_cast<size_t>(kNodes));
}

}  // namespace
