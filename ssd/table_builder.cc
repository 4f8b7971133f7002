// TableBuilder: streams sorted entries into data blocks and, on Finish,
// writes the filter, properties and index blocks and the footer
// (table_format.h, man/matrixfs.5).
#include <cassert>

#include "ssd/block_builder.h"
#include "ssd/bloom_filter.h"
#include "ssd/table.h"
#include "ssd/table_format.h"

namespace mxfs {

struct TableBuilder::Rep {
  Rep(const TableOptions& opts, WritableFile* f)
      : options(opts),
        file(f),
        data_block(opts.block_restart_interval),
        index_block(1),
        filter(opts.bloom_bits_per_key) {
    props.comparator_name = opts.comparator->Name();
    props.bloom_bits_per_key = opts.bloom_bits_per_key > 0 ? static_cast<uint32_t>(opts.bloom_bits_per_key) : 0;
  }

  TableOptions options;
  WritableFile* file;
  uint64_t offset = 0;
  Status status;
  BlockBuilder data_block;
  BlockBuilder index_block;
  BloomFilterBuilder filter;
  std::string last_key;
  TableProperties props;
  bool closed = false;
  // After a data block is written its index entry waits for the next key, so
  // the separator can be shortened against it.
  bool pending_index_entry = false;
  BlockHandle pending_handle;
  std::string scratch;

  // Writes contents and its trailer at offset; returns the handle.
  BlockHandle WriteRawBlock(const Slice& contents, BlockType type) {
    BlockHandle handle{offset, contents.size()};
    if (!status.ok()) return handle;
    std::string trailer;
    AppendBlockTrailer(&trailer, contents, type);
    status = file->Append(contents);
    if (status.ok()) status = file->Append(trailer);
    if (status.ok()) offset += contents.size() + trailer.size();
    return handle;
  }
};

TableBuilder::TableBuilder(const TableOptions& options, WritableFile* file)
    : rep_(std::make_unique<Rep>(options, file)) {}

TableBuilder::~TableBuilder() = default;

void TableBuilder::Add(const Slice& key, const Slice& value) {
  Rep* r = rep_.get();
  assert(!r->closed);
  if (!r->status.ok() || r->closed) return;
  const Comparator* cmp = r->options.comparator;
  if (r->props.num_entries > 0 && cmp->Compare(key, Slice(r->last_key)) <= 0) {
    r->status = Status::InvalidArgument("table " + r->file->path() + ": key " + key.ToEscaped() +
                                        " added after " + Slice(r->last_key).ToEscaped() +
                                        ", keys must be strictly increasing");
    return;
  }
  if (r->pending_index_entry) {
    std::string sep = r->last_key;
    cmp->FindShortestSeparator(&sep, key);
    r->scratch.clear();
    r->pending_handle.EncodeTo(&r->scratch);
    r->index_block.Add(sep, r->scratch);
    r->pending_index_entry = false;
  }
  if (r->options.bloom_bits_per_key > 0) {
    r->filter.AddKey(r->options.filter_key ? r->options.filter_key(key) : key);
  }
  if (r->props.num_entries == 0) r->props.smallest_key = key.ToString();
  r->last_key.assign(key.data(), key.size());
  r->props.num_entries++;
  r->props.raw_key_bytes += key.size();
  r->props.raw_value_bytes += value.size();
  r->data_block.Add(key, value);
  if (r->data_block.CurrentSizeEstimate() >= r->options.block_size) {
    // Flush the block now; its index entry is added with the next key.
    r->pending_handle = r->WriteRawBlock(r->data_block.Finish(), BlockType::kData);
    r->data_block.Reset();
    if (r->status.ok()) {
      r->pending_index_entry = true;
      r->props.num_data_blocks++;
    }
  }
}

Status TableBuilder::Finish() {
  Rep* r = rep_.get();
  if (r->closed) return Status::InvalidArgument("table " + r->file->path() + ": Finish called twice");
  r->closed = true;
  if (!r->data_block.empty()) {
    r->pending_handle = r->WriteRawBlock(r->data_block.Finish(), BlockType::kData);
    r->data_block.Reset();
    r->pending_index_entry = true;
    r->props.num_data_blocks++;
  }
  if (!r->status.ok()) return r->status;
  r->props.data_bytes = r->offset;
  r->props.largest_key = r->last_key;

  Footer footer;
  if (r->options.bloom_bits_per_key > 0) {
    footer.filter = r->WriteRawBlock(r->filter.Finish(), BlockType::kFilter);
  }
  std::string props;
  EncodeProperties(r->props, &props);
  footer.properties = r->WriteRawBlock(props, BlockType::kProperties);
  if (r->pending_index_entry) {
    std::string succ = r->last_key;
    r->options.comparator->FindShortSuccessor(&succ);
    r->scratch.clear();
    r->pending_handle.EncodeTo(&r->scratch);
    r->index_block.Add(succ, r->scratch);
    r->pending_index_entry = false;
  }
  footer.index = r->WriteRawBlock(r->index_block.Finish(), BlockType::kIndex);
  if (!r->status.ok()) return r->status;
  std::string encoded;
  footer.EncodeTo(&encoded);
  r->status = r->file->Append(encoded);
  if (r->status.ok()) r->offset += encoded.size();
  return r->status;
}

void TableBuilder::Abandon() { rep_->closed = true; }

Status TableBuilder::status() const { return rep_->status; }

uint64_t TableBuilder::NumEntries() const { return rep_->props.num_entries; }

uint64_t TableBuilder::FileSize() const { return rep_->offset; }

}  // namespace mxfs
