/* SPDX-License-Identifier: Apache-2.0
 *
 * The floor for `tarmac status --json`: a bare C program that loads NVML,
 * makes the same calls tarmac's NVML backend makes for a one-shot status
 * (identity, fast and slow tiers, process lists and per-process
 * utilization) and prints the same numbers as JSON. bench/run compares the
 * CPU time of the two over the fake libnvidia-ml.
 *
 * Usage: nvml_status_baseline [--proc] [LIBRARY [TICKS]]   (default libnvidia-ml.so.1)
 * With --proc it also reads, for each GPU process, what tarmac's status
 * shows of it from /proc (owner and user name, start time, command line,
 * cgroup) and prints it: the floor for the same information, not only the
 * same NVML calls.
 * With TICKS, after the one-shot status it repeats the agent's fast-tier
 * calls (utilization, memory, power, energy, temperature, clocks, reasons,
 * pstate, process lists and per-process utilization) TICKS times, one tick
 * every INTERVAL_MS (default 100): the floor for the agent's cost per tick.
 * Usage with ticks: nvml_status_baseline LIBRARY TICKS [INTERVAL_MS]
 * On a GPU in MIG mode each tick also walks its MIG devices as the agent
 * does (handle by slot, UUID, GPU and compute instance ids, name, memory,
 * GPM per GPU instance).
 */
#include <dlfcn.h>
#include <fcntl.h>
#include <pwd.h>
#include <sys/stat.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <unistd.h>

typedef int ret_t;
typedef void* dev_t_;
typedef struct { unsigned gpu, memory; } util_t;
typedef struct { unsigned version; unsigned long long total, reserved, free, used; } mem2_t;
typedef struct { unsigned version; int sensor; int temperature; } temp_t;
typedef struct { unsigned pid; unsigned long long used; unsigned gi, ci; } proc_t;
typedef struct { unsigned pid; unsigned long long ts; unsigned sm, mem, enc, dec; } putil_t;
typedef struct { char legacy[16]; unsigned domain, bus, device, id, sub; char bus_id[32]; } pci_t;
typedef struct { unsigned id, scope; long long ts, lat; int type; ret_t ret; unsigned long long value; } field_t;
typedef struct { unsigned long long ts; unsigned long long value; } sample_t;
typedef struct { unsigned id; ret_t ret; double value; char* names[3]; } gpm_metric_t;
typedef struct { unsigned version, count; void* s1; void* s2; gpm_metric_t metrics[98]; } gpm_get_t;

#define SYM(name) dlsym(lib, name)

/* The whole of a small /proc file into buf (NUL-terminated); its length,
 * or -1. */
static int read_proc(unsigned pid, const char* name, char* buf, int size) {
  char path[64];
  snprintf(path, sizeof path, "/proc/%u/%s", pid, name);
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return -1;
  int n = (int)read(fd, buf, (size_t)size - 1);
  close(fd);
  if (n < 0) return -1;
  buf[n] = 0;
  return n;
}

/* What status shows of a process beyond NVML: owner, start time, command,
 * cgroup (as JSON members). */
static void print_proc(unsigned pid) {
  char path[64], buf[4096];
  struct stat st;
  snprintf(path, sizeof path, "/proc/%u", pid);
  if (stat(path, &st) != 0) return;
  /* One passwd lookup per owner, as tarmac caches it. */
  static uid_t last_uid = (uid_t)-1;
  static char last_user[64];
  if (st.st_uid != last_uid) {
    struct passwd* pw = getpwuid(st.st_uid);
    snprintf(last_user, sizeof last_user, "%s", pw ? pw->pw_name : "");
    last_uid = st.st_uid;
  }
  printf(",\"uid\":%u,\"user\":\"%s\"", (unsigned)st.st_uid, last_user);
  if (read_proc(pid, "stat", buf, sizeof buf) > 0) {
    char* p = strrchr(buf, ')');
    unsigned long long start = 0;
    for (int field = 2; p && field < 22; ++field) p = strchr(p + 1, ' ');
    if (p) start = strtoull(p + 1, NULL, 10);
    printf(",\"start_ticks\":%llu", start);
  }
  int n = read_proc(pid, "cmdline", buf, sizeof buf);
  for (int i = 0; i < n - 1; ++i) if (buf[i] == 0) buf[i] = ' ';
  if (n > 0) printf(",\"command\":\"%s\"", buf);
  n = read_proc(pid, "cgroup", buf, sizeof buf);
  if (n > 0) {
    char* nl = strchr(buf, '\n');
    if (nl) *nl = 0;
    printf(",\"cgroup\":\"%s\"", buf);
  }
}

int main(int argc, char** argv) {
  int with_proc = argc > 1 && strcmp(argv[1], "--proc") == 0;
  if (with_proc) { --argc; ++argv; }
  void* lib = dlopen(argc > 1 ? argv[1] : "libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!lib) { fprintf(stderr, "%s\n", dlerror()); return 3; }
  ret_t (*init)(unsigned) = (ret_t (*)(unsigned))SYM("nvmlInitWithFlags");
  ret_t (*shutdown)(void) = (ret_t (*)(void))SYM("nvmlShutdown");
  ret_t (*sys_str)(char*, unsigned) = (ret_t (*)(char*, unsigned))SYM("nvmlSystemGetDriverVersion");
  ret_t (*nvml_str)(char*, unsigned) = (ret_t (*)(char*, unsigned))SYM("nvmlSystemGetNVMLVersion");
  ret_t (*cuda)(int*) = (ret_t (*)(int*))SYM("nvmlSystemGetCudaDriverVersion");
  ret_t (*count_f)(unsigned*) = (ret_t (*)(unsigned*))SYM("nvmlDeviceGetCount_v2");
  ret_t (*handle_f)(unsigned, dev_t_*) = (ret_t (*)(unsigned, dev_t_*))SYM("nvmlDeviceGetHandleByIndex_v2");
  ret_t (*str_f[3])(dev_t_, char*, unsigned) = {
      (ret_t (*)(dev_t_, char*, unsigned))SYM("nvmlDeviceGetUUID"),
      (ret_t (*)(dev_t_, char*, unsigned))SYM("nvmlDeviceGetName"),
      (ret_t (*)(dev_t_, char*, unsigned))SYM("nvmlDeviceGetSerial")};
  ret_t (*pci_f)(dev_t_, pci_t*) = (ret_t (*)(dev_t_, pci_t*))SYM("nvmlDeviceGetPciInfo_v3");
  ret_t (*u_f)(dev_t_, unsigned*);
  ret_t (*clk_f)(dev_t_, int, unsigned*) = (ret_t (*)(dev_t_, int, unsigned*))SYM("nvmlDeviceGetClockInfo");
  ret_t (*maxclk_f)(dev_t_, int, unsigned*) = (ret_t (*)(dev_t_, int, unsigned*))SYM("nvmlDeviceGetMaxClockInfo");
  ret_t (*aff_f)(dev_t_, unsigned, unsigned long*) =
      (ret_t (*)(dev_t_, unsigned, unsigned long*))SYM("nvmlDeviceGetCpuAffinity");
  ret_t (*mig_f)(dev_t_, unsigned*, unsigned*) = (ret_t (*)(dev_t_, unsigned*, unsigned*))SYM("nvmlDeviceGetMigMode");
  ret_t (*thr_f)(dev_t_, int, unsigned*) = (ret_t (*)(dev_t_, int, unsigned*))SYM("nvmlDeviceGetTemperatureThreshold");
  ret_t (*mem1_f)(dev_t_, unsigned long long*) = (ret_t (*)(dev_t_, unsigned long long*))SYM("nvmlDeviceGetMemoryInfo");
  ret_t (*util_f)(dev_t_, util_t*) = (ret_t (*)(dev_t_, util_t*))SYM("nvmlDeviceGetUtilizationRates");
  ret_t (*mem2_f)(dev_t_, mem2_t*) = (ret_t (*)(dev_t_, mem2_t*))SYM("nvmlDeviceGetMemoryInfo_v2");
  ret_t (*energy_f)(dev_t_, unsigned long long*) =
      (ret_t (*)(dev_t_, unsigned long long*))SYM("nvmlDeviceGetTotalEnergyConsumption");
  ret_t (*temp_f)(dev_t_, temp_t*) = (ret_t (*)(dev_t_, temp_t*))SYM("nvmlDeviceGetTemperatureV");
  ret_t (*reasons_f)(dev_t_, unsigned long long*) =
      (ret_t (*)(dev_t_, unsigned long long*))SYM("nvmlDeviceGetCurrentClocksEventReasons");
  ret_t (*pstate_f)(dev_t_, int*) = (ret_t (*)(dev_t_, int*))SYM("nvmlDeviceGetPerformanceState");
  ret_t (*persist_f)(dev_t_, int*) = (ret_t (*)(dev_t_, int*))SYM("nvmlDeviceGetPersistenceMode");
  ret_t (*procs_f[2])(dev_t_, unsigned*, proc_t*) = {
      (ret_t (*)(dev_t_, unsigned*, proc_t*))SYM("nvmlDeviceGetComputeRunningProcesses_v3"),
      (ret_t (*)(dev_t_, unsigned*, proc_t*))SYM("nvmlDeviceGetGraphicsRunningProcesses_v3")};
  ret_t (*putil_f)(dev_t_, putil_t*, unsigned*, unsigned long long) =
      (ret_t (*)(dev_t_, putil_t*, unsigned*, unsigned long long))SYM("nvmlDeviceGetProcessUtilization");
  ret_t (*fields_f)(dev_t_, int, field_t*) = (ret_t (*)(dev_t_, int, field_t*))SYM("nvmlDeviceGetFieldValues");
  ret_t (*ecc_f)(dev_t_, int, int, unsigned long long*) =
      (ret_t (*)(dev_t_, int, int, unsigned long long*))SYM("nvmlDeviceGetTotalEccErrors");
  ret_t (*remap_f)(dev_t_, unsigned*, unsigned*, unsigned*, unsigned*) =
      (ret_t (*)(dev_t_, unsigned*, unsigned*, unsigned*, unsigned*))SYM("nvmlDeviceGetRemappedRows");
  ret_t (*link_f)(dev_t_, unsigned, int*) = (ret_t (*)(dev_t_, unsigned, int*))SYM("nvmlDeviceGetNvLinkState");
  const char* simple[] = {"nvmlDeviceGetMinorNumber", "nvmlDeviceGetPowerManagementDefaultLimit",
                          "nvmlDeviceGetMaxPcieLinkGeneration", "nvmlDeviceGetMaxPcieLinkWidth",
                          "nvmlDeviceGetNumaNodeId", "nvmlDeviceGetPowerUsage",
                          "nvmlDeviceGetEnforcedPowerLimit", "nvmlDeviceGetFanSpeed",
                          "nvmlDeviceGetCurrPcieLinkGeneration", "nvmlDeviceGetCurrPcieLinkWidth"};
  if (!init || init(1) != 0) { fprintf(stderr, "nvml init failed\n"); return 3; }
  char buf[96];
  int cuda_version = 0;
  printf("{\"driver_version\":\"%s\",", sys_str(buf, sizeof buf) == 0 ? buf : "");
  printf("\"nvml_version\":\"%s\",", nvml_str(buf, sizeof buf) == 0 ? buf : "");
  cuda(&cuda_version);
  printf("\"cuda_driver_version\":%d,\"gpus\":[", cuda_version);
  unsigned n = 0;
  count_f(&n);
  struct timeval tv;
  gettimeofday(&tv, NULL);
  unsigned long long now_us = (unsigned long long)tv.tv_sec * 1000000ULL + (unsigned long long)tv.tv_usec;
  for (unsigned i = 0; i < n; ++i) {
    dev_t_ d;
    printf("%s{\"index\":%u", i ? "," : "", i);
    if (handle_f(i, &d) != 0) { printf(",\"health\":\"error\"}"); continue; }
    const char* keys[3] = {"uuid", "name", "serial"};
    for (int k = 0; k < 3; ++k) if (str_f[k](d, buf, sizeof buf) == 0) printf(",\"%s\":\"%s\"", keys[k], buf);
    pci_t pci;
    if (pci_f(d, &pci) == 0) printf(",\"pci_bus_id\":\"%s\"", pci.bus_id);
    for (int k = 0; k < 10; ++k) {
      unsigned v;
      u_f = (ret_t (*)(dev_t_, unsigned*))SYM(simple[k]);
      if (u_f && u_f(d, &v) == 0) printf(",\"%s\":%u", simple[k] + 13, v);
    }
    unsigned v, cur, pend;
    for (int c = 1; c <= 2; ++c) {
      if (maxclk_f(d, c, &v) == 0) printf(",\"max_clock_%d_hertz\":%llu", c, v * 1000000ULL);
      if (clk_f(d, c, &v) == 0) printf(",\"clock_%d_hertz\":%llu", c, v * 1000000ULL);
    }
    unsigned long aff[64];
    if (aff_f(d, 64, aff) == 0) printf(",\"cpu_affinity_word0\":%lu", aff[0]);
    int mode;
    if (persist_f(d, &mode) == 0) printf(",\"persistence_mode_enabled\":%s", mode ? "true" : "false");
    if (mig_f(d, &cur, &pend) == 0) printf(",\"mig_enabled\":%s", cur ? "true" : "false");
    if (thr_f(d, 1, &v) == 0) printf(",\"temperature_slowdown_celsius\":%u", v);
    unsigned long long m1[3];
    if (mem1_f(d, m1) == 0) printf(",\"memory_total_bytes\":%llu", m1[0]);
    util_t u;
    if (util_f(d, &u) == 0) printf(",\"utilization_gpu_ratio\":%g,\"utilization_memory_ratio\":%g", u.gpu / 100.0, u.memory / 100.0);
    mem2_t m = {0x02000028, 0, 0, 0, 0};
    if (mem2_f(d, &m) == 0) printf(",\"memory_used_bytes\":%llu,\"memory_reserved_bytes\":%llu,\"memory_free_bytes\":%llu", m.used, m.reserved, m.free);
    unsigned long long e;
    if (energy_f(d, &e) == 0) printf(",\"energy_millijoules\":%llu", e);
    temp_t t = {0x0100000C, 0, 0};
    if (temp_f(d, &t) == 0) printf(",\"temperature_celsius\":%d", t.temperature);
    if (reasons_f(d, &e) == 0) printf(",\"clock_event_reasons_mask\":%llu", e);
    int ps;
    if (pstate_f(d, &ps) == 0) printf(",\"performance_state\":%d", ps);
    printf(",\"processes\":[");
    int first = 1;
    for (int k = 0; k < 2; ++k) {
      unsigned cnt = 0;
      if (procs_f[k](d, &cnt, NULL) != 7) continue;
      cnt = cnt * 2 + 5;
      proc_t* procs = calloc(cnt, sizeof(proc_t));
      if (procs_f[k](d, &cnt, procs) == 0) {
        unsigned pc = 0;
        putil_t* samples = NULL;
        if (putil_f(d, NULL, &pc, now_us - 1000000) == 7) {
          pc += 5;
          samples = calloc(pc, sizeof(putil_t));
          if (putil_f(d, samples, &pc, now_us - 1000000) != 0) pc = 0;
        } else {
          pc = 0;
        }
        for (unsigned p = 0; p < cnt; ++p) {
          unsigned sm = 0;
          for (unsigned s = 0; s < pc; ++s) if (samples[s].pid == procs[p].pid) sm = samples[s].sm;
          printf("%s{\"pid\":%u,\"used_memory_bytes\":%llu,\"sm_utilization_ratio\":%g", first ? "" : ",",
                 procs[p].pid, procs[p].used, sm / 100.0);
          if (with_proc) print_proc(procs[p].pid);
          printf("}");
          first = 0;
        }
        free(samples);
      }
      free(procs);
    }
    printf("]");
    field_t f[2];
    memset(f, 0, sizeof f);
    f[0].id = 197;
    f[1].id = 198;
    if (fields_f(d, 2, f) == 0) printf(",\"pcie_tx_bytes\":%llu,\"pcie_rx_bytes\":%llu", f[0].value, f[1].value);
    for (int type = 0; type < 2; ++type)
      for (int counter = 0; counter < 2; ++counter)
        if (ecc_f(d, type, counter, &e) == 0) printf(",\"ecc_%d_%d\":%llu", type, counter, e);
    unsigned a, b, c2, dd;
    if (remap_f(d, &a, &b, &c2, &dd) == 0) printf(",\"remapped_rows\":[%u,%u,%u,%u]", a, b, c2, dd);
    printf(",\"nvlink_active\":[");
    for (unsigned l = 0; l < 18; ++l) {
      int active;
      if (link_f(d, l, &active) != 0) break;
      printf("%s%s", l ? "," : "", active ? "true" : "false");
    }
    printf("]}");
  }
  printf("]}\n");
  int ticks = argc > 2 ? atoi(argv[2]) : 0;
  int interval_ms = argc > 3 ? atoi(argv[3]) : 100;
  /* GPM (engine activity), as the agent reads it: two samples per GPU used
   * in turn, metrics over the pair each tick. */
  ret_t (*gpm_alloc)(void**) = (ret_t (*)(void**))SYM("nvmlGpmSampleAlloc");
  ret_t (*gpm_get_sample)(dev_t_, void*) = (ret_t (*)(dev_t_, void*))SYM("nvmlGpmSampleGet");
  ret_t (*gpm_metrics)(gpm_get_t*) = (ret_t (*)(gpm_get_t*))SYM("nvmlGpmMetricsGet");
  void* gpm_samples[64][2] = {{0}};
  /* MIG: the agent's per-tick walk of each MIG-mode GPU's instances. */
  ret_t (*mig_max_f)(dev_t_, unsigned*) = (ret_t (*)(dev_t_, unsigned*))SYM("nvmlDeviceGetMaxMigDeviceCount");
  ret_t (*mig_handle_f)(dev_t_, unsigned, dev_t_*) =
      (ret_t (*)(dev_t_, unsigned, dev_t_*))SYM("nvmlDeviceGetMigDeviceHandleByIndex");
  ret_t (*gi_f)(dev_t_, unsigned*) = (ret_t (*)(dev_t_, unsigned*))SYM("nvmlDeviceGetGpuInstanceId");
  ret_t (*ci_f)(dev_t_, unsigned*) = (ret_t (*)(dev_t_, unsigned*))SYM("nvmlDeviceGetComputeInstanceId");
  ret_t (*gpm_mig_get)(dev_t_, unsigned, void*) = (ret_t (*)(dev_t_, unsigned, void*))SYM("nvmlGpmMigSampleGet");
  static void* mig_gpm[64][8][2];
  int is_mig[64] = {0};
  for (unsigned i = 0; i < n && i < 64; ++i) {
    dev_t_ d;
    unsigned cur = 0, pend = 0;
    if (handle_f(i, &d) == 0 && mig_f && mig_f(d, &cur, &pend) == 0 && cur == 1) is_mig[i] = 1;
  }
  int has_gpm = gpm_alloc && gpm_get_sample && gpm_metrics;
  for (unsigned i = 0; has_gpm && i < n && i < 64; ++i) {
    gpm_alloc(&gpm_samples[i][0]);
    gpm_alloc(&gpm_samples[i][1]);
  }
  static gpm_get_t gpm_get;
  for (int t = 0; t < ticks; ++t) {
    /* Paced like the agent, so the driver (or the fake's 100 ms cache) does
     * the same work per tick. */
    usleep((useconds_t)interval_ms * 1000);
    gettimeofday(&tv, NULL);
    now_us = (unsigned long long)tv.tv_sec * 1000000ULL + (unsigned long long)tv.tv_usec;
    for (unsigned i = 0; i < n; ++i) {
      dev_t_ d;
      if (handle_f(i, &d) != 0) continue;
      util_t u;
      mem2_t m = {0x02000028, 0, 0, 0, 0};
      unsigned long long e;
      temp_t tp = {0x0100000C, 0, 0};
      unsigned v;
      int ps;
      util_f(d, &u);
      mem2_f(d, &m);
      u_f = (ret_t (*)(dev_t_, unsigned*))SYM("nvmlDeviceGetPowerUsage");
      u_f(d, &v);
      u_f = (ret_t (*)(dev_t_, unsigned*))SYM("nvmlDeviceGetEnforcedPowerLimit");
      u_f(d, &v);
      energy_f(d, &e);
      temp_f(d, &tp);
      clk_f(d, 1, &v);
      clk_f(d, 2, &v);
      reasons_f(d, &e);
      pstate_f(d, &ps);
      if (has_gpm && i < 64) {
        void* current = gpm_samples[i][t % 2];
        if (gpm_get_sample(d, current) == 0 && t > 0) {
          memset(&gpm_get, 0, sizeof gpm_get);
          gpm_get.version = 1;
          gpm_get.count = 3;
          gpm_get.s1 = gpm_samples[i][(t + 1) % 2];
          gpm_get.s2 = current;
          gpm_get.metrics[0].id = 1;
          gpm_get.metrics[1].id = 7;
          gpm_get.metrics[2].id = 10;
          gpm_metrics(&gpm_get);
        }
      }
      if (i < 64 && is_mig[i] && mig_max_f && mig_handle_f) {
        unsigned max = 0;
        mig_max_f(d, &max);
        for (unsigned slot = 0; slot < max && slot < 8; ++slot) {
          dev_t_ mig;
          if (mig_handle_f(d, slot, &mig) != 0) continue;
          unsigned gi = 0, ci = 0;
          unsigned long long mm[3];
          str_f[0](mig, buf, sizeof buf);
          gi_f(mig, &gi);
          ci_f(mig, &ci);
          str_f[1](mig, buf, sizeof buf);
          mem1_f(mig, mm);
          if (has_gpm && gpm_mig_get && gi < 8) {
            if (!mig_gpm[i][gi][0]) {
              gpm_alloc(&mig_gpm[i][gi][0]);
              gpm_alloc(&mig_gpm[i][gi][1]);
            }
            void* current = mig_gpm[i][gi][t % 2];
            if (gpm_mig_get(d, gi, current) == 0 && t > 0) {
              memset(&gpm_get, 0, sizeof gpm_get);
              gpm_get.version = 1;
              gpm_get.count = 3;
              gpm_get.s1 = mig_gpm[i][gi][(t + 1) % 2];
              gpm_get.s2 = current;
              gpm_get.metrics[0].id = 1;
              gpm_get.metrics[1].id = 7;
              gpm_get.metrics[2].id = 10;
              gpm_metrics(&gpm_get);
            }
          }
        }
      }
      for (int k = 0; k < 2; ++k) {
        unsigned cnt = 0;
        if (procs_f[k](d, &cnt, NULL) != 7) continue;
        cnt = cnt * 2 + 5;
        proc_t* procs = calloc(cnt, sizeof(proc_t));
        procs_f[k](d, &cnt, procs);
        unsigned pc = 0;
        if (putil_f(d, NULL, &pc, now_us - 1000000) == 7) {
          pc += 5;
          putil_t* samples = calloc(pc, sizeof(putil_t));
          putil_f(d, samples, &pc, now_us - 1000000);
          free(samples);
        }
        free(procs);
      }
    }
  }
  shutdown();
  return 0;
}
