// Names of the files in a database directory:
//   NNNNNN.log   SSD write-ahead log          NNNNNN.sst   SSTable
//   NNNNNN.blob  separated values (blob_store.h)
//   MANIFEST-NNNNNN  version edits            CURRENT      name of the live MANIFEST
//   LOCK         flock held by the owning process
// File numbers come from one counter (VersionSet::NewFileNumber).
//
// Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <string>

namespace mxfs {

enum class FileType { kLog, kTable, kBlob, kManifest, kCurrent, kLock, kTemp };

std::string LogFileName(const std::string& dbname, uint64_t number);
std::string TableFileName(const std::string& dbname, uint64_t number);
std::string BlobFileName(const std::string& dbname, uint64_t number);
std::string ManifestFileName(const std::string& dbname, uint64_t number);
std::string CurrentFileName(const std::string& dbname);
std::string LockFileName(const std::string& dbname);
// Parses a bare file name (no directory); false if it is not one of ours.
bool ParseFileName(const std::string& name, uint64_t* number, FileType* type);

}  // namespace mxfs
