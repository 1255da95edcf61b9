// SPDX-License-Identifier: MIT
// What `run` (rank 0) and `merge` share on the way out: the compatibility data of --matrix, the
// report files, and stdout.
#pragma once

#include <optional>
#include <string>

#include "core/env.hpp"
#include "core/options.hpp"
#include "matrix/compat_matrix.hpp"
#include "report/report.hpp"

namespace preflight {

/// --matrix DIR, loaded and validated once before anything else (a bad file: UsageError, exit 2).
std::optional<CompatMatrix> load_matrix(const Options& options);

/// Writes to a temporary name next to `path`, then renames: a reader (node_exporter's textfile
/// collector, a CI job) never sees half a file. Throws std::runtime_error naming the path.
void write_atomically(const std::string& path, const std::string& contents);

/// Whether `fd` is a terminal worth decorating (colour, the progress line): a TTY, TERM not "dumb".
bool is_terminal(int fd, const EnvSnapshot& env);

/// The files asked for (--json, --junit, --prom), then the chosen format on stdout; colour as
/// --color says, else on a terminal without NO_COLOR.
void emit_report(const Report& report, const Options& options, const EnvSnapshot& env);

}  // namespace preflight
