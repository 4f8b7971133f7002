#include "base/merging_iterator.h"

namespace mxfs {

template class MergingIterator<Iterator>;

std::unique_ptr<Iterator> NewMergingIterator(const Comparator* cmp,
                                             std::vector<std::unique_ptr<Iterator>> children) {
  if (children.size() == 1) return std::move(children[0]);
  return std::make_unique<MergingIterator<Iterator>>(cmp, std::move(children));
}

}  // namespace mxfs
