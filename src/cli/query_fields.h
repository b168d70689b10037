// SPDX-License-Identifier: Apache-2.0
//
// nvidia-smi's query language, so scripts written for
//   nvidia-smi --query-gpu=index,name,utilization.gpu --format=csv
// work unchanged with `tarmac query`. Field names (and nvidia-smi's aliases),
// units in headers ("utilization.gpu [%]"), value formats ("91 %",
// "20480 MiB", "612.34 W"), "[N/A]" for readings the GPU cannot give, and
// the error for unknown fields follow nvidia-smi. Pure functions.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"
#include "node/node_view.h"

namespace tarmac::cli {

struct GpuField {
  std::vector<std::string> names;  // Canonical name first, then aliases.
  std::string unit;                // "%", "MiB", "W", "MHz" or "".
  std::string help;
  std::function<std::optional<std::string>(const node::NodeView&, const node::GpuView&)> value;
};

struct AppField {
  std::vector<std::string> names;
  std::string unit;
  std::string help;
  std::function<std::optional<std::string>(const node::NodeView&, const node::GpuView&,
                                           const node::ProcessView&)>
      value;
};

const std::vector<GpuField>& GpuFields();
const std::vector<AppField>& AppFields();

struct CsvFormat {
  bool has_header = true;
  bool has_units = true;
};

// Parses --format: "csv" with optional ",noheader" and ",nounits".
// kInvalidArgument for anything else.
Result<CsvFormat> ParseCsvFormat(std::string_view text);

// Resolves a comma-separated field list. kInvalidArgument with nvidia-smi's
// message, 'Field "x" is not a valid field to query.', for an unknown name.
Result<std::vector<const GpuField*>> ResolveGpuFields(std::string_view list);
Result<std::vector<const AppField*>> ResolveAppFields(std::string_view list);

// One CSV line per GPU (or per process), as nvidia-smi writes them.
std::string RenderGpuQuery(const node::NodeView& node_view, const std::vector<const GpuField*>& fields,
                           const CsvFormat& format);
std::string RenderAppQuery(const node::NodeView& node_view, const std::vector<const AppField*>& fields,
                           const CsvFormat& format);

// The field list for --help-query-gpu / --help-query-compute-apps.
std::string DescribeGpuFields();
std::string DescribeAppFields();

}  // namespace tarmac::cli
