// Kill points of nvm/ (the mechanism is base/kill_point.h): pool.between_headers,
// wal.mid_append (half the payload copied), wal.before_tail, wal.after_tail,
// rowtable.mid_copy (half the entries written), rowtable.after_copy,
// rowtable.before_commit, rowtable.after_commit, container.before_switch,
// container.after_switch, column.before_commit, column.before_free,
// column.after_unlink, column.after_free.
#pragma once

#include "base/kill_point.h"
