// SPDX-License-Identifier: Apache-2.0
#include "metrics/metrics_config.h"

namespace tarmac::metrics {

void ReadMetricsKeys(ConfigSection& section, RenderOptions* out) {
  section.String("hostname", &out->hostname);
  section.Bool("dcgm_compatible", &out->is_dcgm_compatible);
  section.OneOf("dcgm_hostname_label", {"Hostname", "hostname"}, &out->dcgm_hostname_label);
  ReadInteger(section, "max_process_series", &out->max_process_series, 0, 100000);
  section.Bool("device_pod_uid", &out->has_device_pod_uid);
}

}  // namespace tarmac::metrics
