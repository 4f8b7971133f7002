// SkipList: the memtable's ordered index, allocated in an Arena.
//
// Nodes are never removed. A node's next pointers are std::atomic and are
// published with release stores after the node is fully initialised; readers
// load them with acquire, so a reader sees either the old list or the new
// node complete.
//
// Thread-safety: one writer at a time (Insert, externally synchronised);
// any number of concurrent readers (Contains, Iterator) without locks. The
// Arena must outlive the list.
#pragma once

#include <atomic>
#include <cassert>
#include <cstddef>
#include <new>

#include "base/random.h"
#include "kvcore/arena.h"

namespace mxfs {

template <typename Key, class Cmp>
class SkipList {
 private:
  struct Node;

 public:
  SkipList(Cmp cmp, Arena* arena);
  SkipList(const SkipList&) = delete;
  SkipList& operator=(const SkipList&) = delete;

  // key must not compare equal to anything already in the list.
  void Insert(const Key& key);
  // Insert in two steps, for a key that points into memory of its own:
  // AllocateWithNode returns `bytes` of arena memory right behind a new
  // node (same allocation), the caller writes its key there, and
  // InsertAllocated links the node. A search then reads each node and its
  // key from one place instead of two (a cache miss less per comparison).
  char* AllocateWithNode(size_t bytes);
  void InsertAllocated(char* mem, const Key& key);
  bool Contains(const Key& key) const;

  // Searches lists[0..n) for key at once, a step of each in turn, and sets
  // found[i] to the first key >= key in lists[i] (nullptr: none). Each step
  // of a search waits for a node that is mostly out of the cache beside a
  // writer; taking the lists' steps in turn keeps their misses in flight
  // together instead of one after the other (a Get searches the mutable
  // memtable and, most of the time, an immutable one being flushed).
  static void FindEach(const SkipList* const* lists, int n, const Key& key, const Key** found);

  class Iterator {
   public:
    explicit Iterator(const SkipList* list) : list_(list) {}
    bool Valid() const { return node_ != nullptr; }
    const Key& key() const {
      assert(Valid());
      return node_->key;
    }
    void Next() { node_ = node_->Next(0); }
    void Prev() {
      node_ = list_->FindLessThan(node_->key);
      if (node_ == list_->head_) node_ = nullptr;
    }
    void Seek(const Key& target) { node_ = list_->FindGreaterOrEqual(target, nullptr); }
    void SeekToFirst() { node_ = list_->head_->Next(0); }
    void SeekToLast() {
      node_ = list_->FindLast();
      if (node_ == list_->head_) node_ = nullptr;
    }

   private:
    const SkipList* list_;
    Node* node_ = nullptr;
  };

 private:
  static constexpr int kMaxHeight = 12;

  struct Node {
    explicit Node(const Key& k) : key(k) {}
    Key key;  // set before the node is published (InsertAllocated)
    Node* Next(int n) { return next_[n].load(std::memory_order_acquire); }
    void SetNext(int n, Node* x) { next_[n].store(x, std::memory_order_release); }
    Node* NoBarrierNext(int n) { return next_[n].load(std::memory_order_relaxed); }
    void NoBarrierSetNext(int n, Node* x) { next_[n].store(x, std::memory_order_relaxed); }
    // Allocated with the node's height; next_[0] is the bottom level.
    std::atomic<Node*> next_[1];
  };

  Node* NewNode(const Key& key, int height);
  void Link(Node* x, int height, Node** prev);
  size_t NodeSize(int height) const { return sizeof(Node) + sizeof(std::atomic<Node*>) * (height - 1); }
  // AllocateWithNode's node: its height, and where it sits.
  int pending_height_ = 0;
  char* pending_mem_ = nullptr;
  int RandomHeight();
  int GetMaxHeight() const { return max_height_.load(std::memory_order_relaxed); }
  bool Equal(const Key& a, const Key& b) const { return compare_(a, b) == 0; }
  bool KeyIsAfterNode(const Key& key, Node* n) const { return n != nullptr && compare_(n->key, key) < 0; }
  Node* FindGreaterOrEqual(const Key& key, Node** prev) const;
  // One search of FindEach: FindGreaterOrEqual's loop, a step at a time.
  struct Search {
    const SkipList* list;
    Node* x;
    Node* last_bigger;
    int level;
  };
  // One step of s: true with *found set when the search has ended.
  bool Step(const Key& key, Search* s, Node** found) const;
  // The cache lines of n's node and of the entry behind it (AllocateWithNode).
  static void Prefetch(const Node* n) {
    if (n == nullptr) return;
    __builtin_prefetch(n, 0, 1);
    __builtin_prefetch(reinterpret_cast<const char*>(n) + 64, 0, 1);
  }
  Node* FindLessThan(const Key& key) const;
  Node* FindLast() const;

  Cmp const compare_;
  Arena* const arena_;
  Node* const head_;
  std::atomic<int> max_height_{1};
  Random rnd_{0xdeadbeef};
};

template <typename Key, class Cmp>
typename SkipList<Key, Cmp>::Node* SkipList<Key, Cmp>::NewNode(const Key& key, int height) {
  char* mem = arena_->AllocateAligned(NodeSize(height));
  Node* n = new (mem) Node(key);
  for (int i = 1; i < height; i++) new (&n->next_[i]) std::atomic<Node*>(nullptr);
  return n;
}

template <typename Key, class Cmp>
int SkipList<Key, Cmp>::RandomHeight() {
  int height = 1;
  while (height < kMaxHeight && rnd_.OneIn(4)) height++;
  return height;
}

template <typename Key, class Cmp>
typename SkipList<Key, Cmp>::Node* SkipList<Key, Cmp>::FindGreaterOrEqual(const Key& key, Node** prev) const {
  Node* x = head_;
  int level = GetMaxHeight() - 1;
  // The node that stopped the search one level up: key is not after it, so
  // meeting it again on the way down costs no comparison (about a third of
  // them in a large list).
  Node* last_bigger = nullptr;
  while (true) {
    Node* next = x->Next(level);
    if (next != last_bigger && next != nullptr) {
      // The node after next on this level, while key is compared with
      // next's: if the search moves right, its node and key are on their
      // way (RocksDB's InlineSkipList does the same). Beside a writer the
      // nodes are mostly out of the cache, a miss per node visited.
      Prefetch(next->NoBarrierNext(level));
    }
    if (next != last_bigger && KeyIsAfterNode(key, next)) {
      x = next;
    } else {
      if (prev != nullptr) prev[level] = x;
      if (level == 0) return next;
      last_bigger = next;
      level--;
    }
  }
}

template <typename Key, class Cmp>
bool SkipList<Key, Cmp>::Step(const Key& key, Search* s, Node** found) const {
  Node* next = s->x->Next(s->level);
  if (next != s->last_bigger && next != nullptr) {
    // Where the search goes if it drops a level: x's node is in the cache,
    // the node it points to one level down mostly not.
    if (s->level > 0) Prefetch(s->x->NoBarrierNext(s->level - 1));
    Prefetch(next->NoBarrierNext(s->level));
    if (KeyIsAfterNode(key, next)) {
      s->x = next;
      return false;
    }
  }
  if (s->level == 0) {
    *found = next;
    return true;
  }
  s->last_bigger = next;
  s->level--;
  return false;
}

template <typename Key, class Cmp>
void SkipList<Key, Cmp>::FindEach(const SkipList* const* lists, int n, const Key& key, const Key** found) {
  constexpr int kAtOnce = 4;
  for (int first = 0; first < n; first += kAtOnce) {
    const int count = n - first < kAtOnce ? n - first : kAtOnce;
    Search searches[kAtOnce];
    int running = 0;  // searches[0..running) have not ended
    int index[kAtOnce];  // searches[j] is lists[index[j]]'s
    for (int i = 0; i < count; i++) {
      const SkipList* list = lists[first + i];
      searches[running] = Search{list, list->head_, nullptr, list->GetMaxHeight() - 1};
      index[running++] = first + i;
    }
    while (running > 0) {
      for (int j = 0; j < running;) {
        Node* node;
        if (searches[j].list->Step(key, &searches[j], &node)) {
          found[index[j]] = node == nullptr ? nullptr : &node->key;
          running--;
          searches[j] = searches[running];
          index[j] = index[running];
        } else {
          j++;
        }
      }
    }
  }
}

template <typename Key, class Cmp>
typename SkipList<Key, Cmp>::Node* SkipList<Key, Cmp>::FindLessThan(const Key& key) const {
  Node* x = head_;
  int level = GetMaxHeight() - 1;
  while (true) {
    Node* next = x->Next(level);
    if (next == nullptr || compare_(next->key, key) >= 0) {
      if (level == 0) return x;
      level--;
    } else {
      x = next;
    }
  }
}

template <typename Key, class Cmp>
typename SkipList<Key, Cmp>::Node* SkipList<Key, Cmp>::FindLast() const {
  Node* x = head_;
  int level = GetMaxHeight() - 1;
  while (true) {
    Node* next = x->Next(level);
    if (next == nullptr) {
      if (level == 0) return x;
      level--;
    } else {
      x = next;
    }
  }
}

template <typename Key, class Cmp>
SkipList<Key, Cmp>::SkipList(Cmp cmp, Arena* arena)
    : compare_(cmp), arena_(arena), head_(NewNode(Key(), kMaxHeight)) {
  for (int i = 0; i < kMaxHeight; i++) head_->SetNext(i, nullptr);
}

template <typename Key, class Cmp>
void SkipList<Key, Cmp>::Insert(const Key& key) {
  Node* prev[kMaxHeight];
  Node* x = FindGreaterOrEqual(key, prev);
  assert(x == nullptr || !Equal(key, x->key));
  (void)x;
  const int height = RandomHeight();
  Link(NewNode(key, height), height, prev);
}

template <typename Key, class Cmp>
char* SkipList<Key, Cmp>::AllocateWithNode(size_t bytes) {
  pending_height_ = RandomHeight();
  const size_t node = NodeSize(pending_height_);
  pending_mem_ = arena_->AllocateAligned(node + bytes);
  return pending_mem_ + node;
}

template <typename Key, class Cmp>
void SkipList<Key, Cmp>::InsertAllocated(char* mem, const Key& key) {
  assert(mem == pending_mem_ + NodeSize(pending_height_));
  (void)mem;
  Node* prev[kMaxHeight];
  Node* x = FindGreaterOrEqual(key, prev);
  assert(x == nullptr || !Equal(key, x->key));
  (void)x;
  const int height = pending_height_;
  Node* n = new (pending_mem_) Node(key);
  for (int i = 1; i < height; i++) new (&n->next_[i]) std::atomic<Node*>(nullptr);
  pending_mem_ = nullptr;
  Link(n, height, prev);
}

template <typename Key, class Cmp>
void SkipList<Key, Cmp>::Link(Node* x, int height, Node** prev) {
  if (height > GetMaxHeight()) {
    for (int i = GetMaxHeight(); i < height; i++) prev[i] = head_;
    // A reader that sees the new height before the node finds nullptr in
    // head_'s new levels and simply drops down a level.
    max_height_.store(height, std::memory_order_relaxed);
  }
  for (int i = 0; i < height; i++) {
    x->NoBarrierSetNext(i, prev[i]->NoBarrierNext(i));
    prev[i]->SetNext(i, x);  // release: publishes the node's contents
  }
}

template <typename Key, class Cmp>
bool SkipList<Key, Cmp>::Contains(const Key& key) const {
  Node* x = FindGreaterOrEqual(key, nullptr);
  return x != nullptr && Equal(key, x->key);
}

}  // namespace mxfs
