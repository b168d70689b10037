// SPDX-License-Identifier: Apache-2.0
//
// tarmac's own declarations of the NVML C ABI subset it uses. No NVIDIA
// header is needed to build: the types, constants and struct layouts here
// are restated from the public nvml.h facts collected in docs/nvml.md, and
// the library is dlopen()ed at run time (NvmlLibrary::Load). The fake
// libnvidia-ml (tools/fakenvml) implements the same declarations.
//
// Names keep NVML's spelling (nvmlMemory_v2_t -> MemoryV2) and each says
// where it comes from, so a reader can check it against the header.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "common/result.h"

// Opaque handles, as in nvml.h. Pointers to these are all the ABI needs.
struct nvmlDevice_st;
struct nvmlEventSet_st;
struct nvmlGpmSample_st;

namespace tarmac::gpu::nvml {

using Device = nvmlDevice_st*;      // nvmlDevice_t
using EventSet = nvmlEventSet_st*;  // nvmlEventSet_t
using Return = int;                 // nvmlReturn_t (a 4-byte C enum)

// nvmlReturn_t values.
inline constexpr Return kSuccess = 0;
inline constexpr Return kErrorUninitialized = 1;
inline constexpr Return kErrorInvalidArgument = 2;
inline constexpr Return kErrorNotSupported = 3;
inline constexpr Return kErrorNoPermission = 4;
inline constexpr Return kErrorNotFound = 6;
inline constexpr Return kErrorInsufficientSize = 7;
inline constexpr Return kErrorDriverNotLoaded = 9;
inline constexpr Return kErrorTimeout = 10;
inline constexpr Return kErrorLibraryNotFound = 12;
inline constexpr Return kErrorFunctionNotFound = 13;
inline constexpr Return kErrorGpuIsLost = 15;
inline constexpr Return kErrorLibRmVersionMismatch = 18;
inline constexpr Return kErrorInUse = 19;
inline constexpr Return kErrorInsufficientResources = 23;
inline constexpr Return kErrorArgumentVersionMismatch = 25;
inline constexpr Return kErrorUnknown = 999;

// NVML's symbolic name for `code` without the NVML_ERROR_ prefix
// ("GPU_IS_LOST", "TIMEOUT"); "CODE_<n>" for codes tarmac does not name.
// Stable across driver versions, unlike ErrorText: used as a metric label.
std::string ReturnName(Return code);

// Enumerations used as arguments.
inline constexpr unsigned kInitFlagNoGpus = 1;  // NVML_INIT_FLAG_NO_GPUS
inline constexpr int kTemperatureGpu = 0;       // NVML_TEMPERATURE_GPU
inline constexpr int kTemperatureThresholdSlowdown = 1;
inline constexpr int kClockGraphics = 0;         // NVML_CLOCK_GRAPHICS
inline constexpr int kClockSm = 1;               // NVML_CLOCK_SM
inline constexpr int kClockMem = 2;              // NVML_CLOCK_MEM
inline constexpr int kClockVideo = 3;            // NVML_CLOCK_VIDEO
inline constexpr int kMemoryErrorCorrected = 0;  // NVML_MEMORY_ERROR_TYPE_CORRECTED
inline constexpr int kMemoryErrorUncorrected = 1;
inline constexpr int kEccCounterVolatile = 0;   // NVML_VOLATILE_ECC
inline constexpr int kEccCounterAggregate = 1;  // NVML_AGGREGATE_ECC
inline constexpr int kPcieUtilTxBytes = 0;      // NVML_PCIE_UTIL_TX_BYTES
inline constexpr int kPcieUtilRxBytes = 1;
inline constexpr int kSamplingGpuUtilization = 1;  // NVML_GPU_UTILIZATION_SAMPLES
inline constexpr int kValueTypeDouble = 0;         // nvmlValueType_t
inline constexpr int kValueTypeUnsignedInt = 1;
inline constexpr int kValueTypeUnsignedLong = 2;
inline constexpr int kValueTypeUnsignedLongLong = 3;
inline constexpr int kValueTypeSignedLongLong = 4;
inline constexpr int kValueTypeSignedInt = 5;
inline constexpr int kPstateUnknown = 32;        // NVML_PSTATE_UNKNOWN
inline constexpr unsigned kNvLinkMaxLinks = 18;  // NVML_NVLINK_MAX_LINKS (12.x)
inline constexpr unsigned kValueNotAvailableUint = 0xFFFFFFFFu;
inline constexpr unsigned long long kValueNotAvailableUll = ~0ULL;

// Event types (nvmlEventType*).
inline constexpr unsigned long long kEventSingleBitEccError = 0x1;
inline constexpr unsigned long long kEventDoubleBitEccError = 0x2;
inline constexpr unsigned long long kEventXidCriticalError = 0x8;
inline constexpr unsigned long long kEventMigConfigChange = 0x100;

// Field ids (NVML_FI_DEV_*) for nvmlDeviceGetFieldValues.
inline constexpr unsigned kFieldPcieCountTxBytes = 197;
inline constexpr unsigned kFieldPcieCountRxBytes = 198;
inline constexpr unsigned kFieldTotalEnergyConsumption = 83;
inline constexpr unsigned kFieldNvlinkCrcDataErrorsTotal = 45;
inline constexpr unsigned kFieldNvlinkReplayErrorsTotal = 52;
inline constexpr unsigned kFieldNvlinkRecoveryErrorsTotal = 59;
inline constexpr unsigned kFieldNvlinkLinkCount = 91;
inline constexpr unsigned kFieldPcieReplayCounter = 94;
inline constexpr unsigned kFieldRetiredSingleBit = 29;
inline constexpr unsigned kFieldRetiredDoubleBit = 30;
inline constexpr unsigned kFieldRetiredPending = 31;
inline constexpr unsigned kFieldMemoryTemp = 82;               // NVML_FI_DEV_MEMORY_TEMP (C)
inline constexpr unsigned kFieldNvlinkThroughputDataTx = 138;  // ..._NVLINK_THROUGHPUT_DATA_TX (KiB)
inline constexpr unsigned kFieldNvlinkThroughputDataRx = 139;  // ..._NVLINK_THROUGHPUT_DATA_RX (KiB)

inline constexpr unsigned kGpuVirtualizationModeVgpu = 2;   // NVML_GPU_VIRTUALIZATION_MODE_VGPU (a guest)
inline constexpr unsigned kGridLicenseBufferSize = 128;     // NVML_GRID_LICENSE_BUFFER_SIZE
inline constexpr unsigned kGridLicenseFeatureMaxCount = 3;  // NVML_GRID_LICENSE_FEATURE_MAX_COUNT
inline constexpr int kGridLicenseFeatureCodeVgpu = 1;       // NVML_GRID_LICENSE_FEATURE_CODE_VGPU

// Buffer sizes (NVML_*_BUFFER_SIZE), the _V2 sizes where there are two.
inline constexpr unsigned kDeviceNameBufferSize = 96;
inline constexpr unsigned kDeviceUuidBufferSize = 96;
inline constexpr unsigned kDeviceSerialBufferSize = 30;
inline constexpr unsigned kSystemDriverVersionBufferSize = 80;
inline constexpr unsigned kSystemNvmlVersionBufferSize = 80;

// NVML_STRUCT_VERSION(data, ver): sizeof(struct) | ver << 24.
constexpr unsigned StructVersion(unsigned size, unsigned version) { return size | (version << 24U); }

struct PciInfo {  // nvmlPciInfo_t (v1..v3 share it), 68 bytes
  char busIdLegacy[16];
  unsigned domain;
  unsigned bus;
  unsigned device;
  unsigned pciDeviceId;
  unsigned pciSubSystemId;
  char busId[32];
};
static_assert(sizeof(PciInfo) == 68);

struct Utilization {  // nvmlUtilization_t
  unsigned gpu;
  unsigned memory;
};
static_assert(sizeof(Utilization) == 8);

struct MemoryV1 {  // nvmlMemory_t: used INCLUDES reserved on R510+
  unsigned long long total;
  unsigned long long free;
  unsigned long long used;
};
static_assert(sizeof(MemoryV1) == 24);

struct MemoryV2 {  // nvmlMemory_v2_t
  unsigned version;
  unsigned long long total;
  unsigned long long reserved;
  unsigned long long free;
  unsigned long long used;
};
static_assert(sizeof(MemoryV2) == 40);
inline constexpr unsigned kMemoryV2Version = StructVersion(sizeof(MemoryV2), 2);  // 0x02000028

struct TemperatureV1 {  // nvmlTemperature_v1_t
  unsigned version;
  int sensorType;
  int temperature;
};
static_assert(sizeof(TemperatureV1) == 12);
inline constexpr unsigned kTemperatureV1Version = StructVersion(sizeof(TemperatureV1), 1);

struct ProcessInfoV1 {  // nvmlProcessInfo_v1_t, legacy symbol
  unsigned pid;
  unsigned long long usedGpuMemory;
};
static_assert(sizeof(ProcessInfoV1) == 16);

struct ProcessInfoV2 {  // nvmlProcessInfo_v2_t == nvmlProcessInfo_t (_v2 and _v3)
  unsigned pid;
  unsigned long long usedGpuMemory;
  unsigned gpuInstanceId;
  unsigned computeInstanceId;
};
static_assert(sizeof(ProcessInfoV2) == 24);

// _v3 entries on drivers 535.43..535.86 only (not in public headers).
inline constexpr size_t kProcessInfoCcStride = 32;

struct ProcessUtilizationSample {  // nvmlProcessUtilizationSample_t
  unsigned pid;
  unsigned long long timeStamp;  // microseconds, CPU clock
  unsigned smUtil;
  unsigned memUtil;
  unsigned encUtil;
  unsigned decUtil;
};
static_assert(sizeof(ProcessUtilizationSample) == 32);

struct EventData {  // nvmlEventData_t
  Device device;
  unsigned long long eventType;
  unsigned long long eventData;  // Xid for XidCriticalError
  unsigned gpuInstanceId;
  unsigned computeInstanceId;
};
static_assert(sizeof(EventData) == 32);

union Value {  // nvmlValue_t
  double dVal;
  int siVal;
  unsigned uiVal;
  unsigned long ulVal;
  unsigned long long ullVal;
  signed long long sllVal;
  unsigned short usVal;
};
static_assert(sizeof(Value) == 8);

struct GridLicensableFeatureV3 {  // nvmlGridLicensableFeature_v3_t
  int featureCode;                // nvmlGridLicenseFeatureCode_t
  unsigned featureState;          // Non-zero while licensed.
  char licenseInfo[kGridLicenseBufferSize];
  char productName[kGridLicenseBufferSize];
  unsigned featureEnabled;
};
static_assert(sizeof(GridLicensableFeatureV3) == 268);

struct GridLicensableFeaturesV3 {  // nvmlGridLicensableFeatures_v3_t
  int isGridLicenseSupported;
  unsigned licensableFeaturesCount;
  GridLicensableFeatureV3 gridLicensableFeatures[kGridLicenseFeatureMaxCount];
};
static_assert(sizeof(GridLicensableFeaturesV3) == 812);

struct FieldValue {  // nvmlFieldValue_t
  unsigned fieldId;
  unsigned scopeId;
  long long timestamp;
  long long latencyUsec;
  int valueType;
  Return nvmlReturn;
  Value value;
};
static_assert(sizeof(FieldValue) == 40);

struct Sample {  // nvmlSample_t
  unsigned long long timeStamp;
  Value sampleValue;
};
static_assert(sizeof(Sample) == 16);

// GPU Performance Monitoring (GPM, Hopper and newer): engine activity over
// the interval between two samples the caller takes.
using GpmSample = nvmlGpmSample_st*;                     // nvmlGpmSample_t
inline constexpr unsigned kGpmMetricGraphicsUtil = 1;    // NVML_GPM_METRIC_GRAPHICS_UTIL (%)
inline constexpr unsigned kGpmMetricSmUtil = 2;          // NVML_GPM_METRIC_SM_UTIL (%)
inline constexpr unsigned kGpmMetricAnyTensorUtil = 5;   // NVML_GPM_METRIC_ANY_TENSOR_UTIL (%)
inline constexpr unsigned kGpmMetricHmmaTensorUtil = 7;  // NVML_GPM_METRIC_HMMA_TENSOR_UTIL (%)
inline constexpr unsigned kGpmMetricDramBwUtil = 10;     // NVML_GPM_METRIC_DRAM_BW_UTIL (%)
inline constexpr unsigned kGpmMetricMax = 98;            // NVML_GPM_METRIC_MAX (12.x headers)
inline constexpr unsigned kGpmMetricsGetVersion = 1;     // NVML_GPM_METRICS_GET_VERSION
inline constexpr unsigned kGpmSupportVersion = 1;        // NVML_GPM_SUPPORT_VERSION

struct GpmMetric {  // nvmlGpmMetric_t
  unsigned metricId;
  Return nvmlReturn;
  double value;
  struct {
    char* shortName;
    char* longName;
    char* unit;
  } metricInfo;
};
static_assert(sizeof(GpmMetric) == 40);

struct GpmMetricsGet {  // nvmlGpmMetricsGet_t
  unsigned version;
  unsigned numMetrics;
  GpmSample sample1;
  GpmSample sample2;
  GpmMetric metrics[kGpmMetricMax];
};
static_assert(sizeof(GpmMetricsGet) == 24 + 40 * kGpmMetricMax);

struct GpmSupport {  // nvmlGpmSupport_t
  unsigned version;
  unsigned isSupportedDevice;
};
static_assert(sizeof(GpmSupport) == 8);

// The resolved entry points. Required ones are never null after Load();
// optional ones are null when the driver's library lacks the symbol.
struct Api {
  // Required.
  Return (*InitV2)();                                     // nvmlInit_v2
  Return (*Shutdown)();                                   // nvmlShutdown
  const char* (*ErrorString)(Return);                     // nvmlErrorString
  Return (*DeviceGetCountV2)(unsigned*);                  // nvmlDeviceGetCount_v2
  Return (*DeviceGetHandleByIndexV2)(unsigned, Device*);  // nvmlDeviceGetHandleByIndex_v2

  // Optional.
  Return (*InitWithFlags)(unsigned);                                       // nvmlInitWithFlags
  Return (*SystemGetDriverVersion)(char*, unsigned);                       // nvmlSystemGetDriverVersion
  Return (*SystemGetNVMLVersion)(char*, unsigned);                         // nvmlSystemGetNVMLVersion
  Return (*SystemGetCudaDriverVersion)(int*);                              // nvmlSystemGetCudaDriverVersion
  Return (*DeviceGetName)(Device, char*, unsigned);                        // nvmlDeviceGetName
  Return (*DeviceGetUUID)(Device, char*, unsigned);                        // nvmlDeviceGetUUID
  Return (*DeviceGetSerial)(Device, char*, unsigned);                      // nvmlDeviceGetSerial
  Return (*DeviceGetPciInfoV3)(Device, PciInfo*);                          // nvmlDeviceGetPciInfo_v3
  Return (*DeviceGetMinorNumber)(Device, unsigned*);                       // nvmlDeviceGetMinorNumber
  Return (*DeviceGetUtilizationRates)(Device, Utilization*);               // nvmlDeviceGetUtilizationRates
  Return (*DeviceGetEncoderUtilization)(Device, unsigned*, unsigned*);     // (%, sampling period us)
  Return (*DeviceGetDecoderUtilization)(Device, unsigned*, unsigned*);     // (%, sampling period us)
  Return (*DeviceGetMemoryInfo)(Device, MemoryV1*);                        // nvmlDeviceGetMemoryInfo
  Return (*DeviceGetMemoryInfoV2)(Device, MemoryV2*);                      // nvmlDeviceGetMemoryInfo_v2
  Return (*DeviceGetPowerUsage)(Device, unsigned*);                        // nvmlDeviceGetPowerUsage (mW)
  Return (*DeviceGetEnforcedPowerLimit)(Device, unsigned*);                // nvmlDeviceGetEnforcedPowerLimit
  Return (*DeviceGetPowerManagementDefaultLimit)(Device, unsigned*);       // ...DefaultLimit
  Return (*DeviceGetTotalEnergyConsumption)(Device, unsigned long long*);  // mJ
  Return (*DeviceGetTemperature)(Device, int, unsigned*);                  // nvmlDeviceGetTemperature
  Return (*DeviceGetTemperatureV)(Device, TemperatureV1*);                 // nvmlDeviceGetTemperatureV
  Return (*DeviceGetTemperatureThreshold)(Device, int, unsigned*);
  Return (*DeviceGetFanSpeed)(Device, unsigned*);           // nvmlDeviceGetFanSpeed (%)
  Return (*DeviceGetPerformanceState)(Device, int*);        // nvmlDeviceGetPerformanceState
  Return (*DeviceGetClockInfo)(Device, int, unsigned*);     // nvmlDeviceGetClockInfo (MHz)
  Return (*DeviceGetMaxClockInfo)(Device, int, unsigned*);  // nvmlDeviceGetMaxClockInfo (MHz)
  Return (*DeviceGetCurrentClocksEventReasons)(Device, unsigned long long*);
  Return (*DeviceGetCurrentClocksThrottleReasons)(Device, unsigned long long*);  // old name
  Return (*DeviceGetPersistenceMode)(Device, int*);                      // nvmlDeviceGetPersistenceMode
  Return (*DeviceGetMigMode)(Device, unsigned*, unsigned*);              // nvmlDeviceGetMigMode
  Return (*DeviceIsMigDeviceHandle)(Device, unsigned*);                  // nvmlDeviceIsMigDeviceHandle
  Return (*DeviceGetMaxMigDeviceCount)(Device, unsigned*);               // nvmlDeviceGetMaxMigDeviceCount
  Return (*DeviceGetMigDeviceHandleByIndex)(Device, unsigned, Device*);  // NOT_FOUND for empty slots
  Return (*DeviceGetDeviceHandleFromMigDeviceHandle)(Device, Device*);
  Return (*DeviceGetGpuInstanceId)(Device, unsigned*);       // nvmlDeviceGetGpuInstanceId
  Return (*DeviceGetComputeInstanceId)(Device, unsigned*);   // nvmlDeviceGetComputeInstanceId
  Return (*DeviceGetVirtualizationMode)(Device, unsigned*);  // nvmlDeviceGetVirtualizationMode
  Return (*DeviceGetGridLicensableFeaturesV3)(Device, GridLicensableFeaturesV3*);  // ..._v3
  Return (*DeviceGetTotalEccErrors)(Device, int, int, unsigned long long*);
  Return (*DeviceGetRemappedRows)(Device, unsigned*, unsigned*, unsigned*, unsigned*);
  Return (*DeviceGetCurrPcieLinkGeneration)(Device, unsigned*);
  Return (*DeviceGetCurrPcieLinkWidth)(Device, unsigned*);
  Return (*DeviceGetMaxPcieLinkGeneration)(Device, unsigned*);
  Return (*DeviceGetMaxPcieLinkWidth)(Device, unsigned*);
  Return (*DeviceGetFieldValues)(Device, int, FieldValue*);  // nvmlDeviceGetFieldValues
  Return (*DeviceGetNvLinkState)(Device, unsigned, int*);    // nvmlDeviceGetNvLinkState
  Return (*DeviceGetNvLinkRemotePciInfoV2)(Device, unsigned,
                                           PciInfo*);  // nvmlDeviceGetNvLinkRemotePciInfo_v2
  Return (*DeviceGetNumaNodeId)(Device, unsigned*);    // nvmlDeviceGetNumaNodeId
  Return (*DeviceGetCpuAffinity)(Device, unsigned, unsigned long*);
  Return (*DeviceGetComputeRunningProcessesV3)(Device, unsigned*, void*);
  Return (*DeviceGetComputeRunningProcessesV2)(Device, unsigned*, void*);
  Return (*DeviceGetComputeRunningProcesses)(Device, unsigned*, void*);  // v1, 16-byte entries
  Return (*DeviceGetGraphicsRunningProcessesV3)(Device, unsigned*, void*);
  Return (*DeviceGetGraphicsRunningProcessesV2)(Device, unsigned*, void*);
  Return (*DeviceGetGraphicsRunningProcesses)(Device, unsigned*, void*);
  Return (*DeviceGetProcessUtilization)(Device, ProcessUtilizationSample*, unsigned*, unsigned long long);
  Return (*DeviceGetSamples)(Device, int, unsigned long long, int*, unsigned*, Sample*);
  Return (*EventSetCreate)(EventSet*);
  Return (*DeviceRegisterEvents)(Device, unsigned long long, EventSet);
  Return (*DeviceGetSupportedEventTypes)(Device, unsigned long long*);
  Return (*EventSetWaitV2)(EventSet, EventData*, unsigned);  // nvmlEventSetWait_v2
  Return (*EventSetFree)(EventSet);
  Return (*GpmQueryDeviceSupport)(Device, GpmSupport*);    // nvmlGpmQueryDeviceSupport
  Return (*GpmSampleAlloc)(GpmSample*);                    // nvmlGpmSampleAlloc
  Return (*GpmSampleFree)(GpmSample);                      // nvmlGpmSampleFree
  Return (*GpmSampleGet)(Device, GpmSample);               // nvmlGpmSampleGet
  Return (*GpmMigSampleGet)(Device, unsigned, GpmSample);  // nvmlGpmMigSampleGet (GPU instance id)
  Return (*GpmMetricsGet)(GpmMetricsGet*);                 // nvmlGpmMetricsGet
  // Presence markers for the process-entry stride heuristic (docs/nvml.md).
  void* DeviceGetConfComputeMemSizeInfo;
  void* DeviceGetRunningProcessDetailList;
};

// A loaded libnvidia-ml. Closing it (destruction) does not call
// nvmlShutdown; the owner does.
class Library {
 public:
  // Opens the library: `explicit_path` when not empty, else
  // libnvidia-ml.so.1, then libnvidia-ml.so. Resolves every symbol of Api.
  // kUnavailable naming every file tried and why when none loads, or naming
  // the missing symbol when a required one is absent.
  static Result<std::unique_ptr<Library>> Load(const std::string& explicit_path);

  ~Library();
  Library(const Library&) = delete;
  Library& operator=(const Library&) = delete;

  const Api& api() const { return api_; }
  const std::string& path() const { return path_; }  // Resolved file path.

  // NVML's text for `code` ("GPU is lost"); "unknown error N" when the
  // library gives none.
  std::string ErrorText(Return code) const;

 private:
  Library(void* handle, std::string path) : handle_(handle), path_(std::move(path)) {}

  void* handle_;
  std::string path_;
  Api api_{};
};

}  // namespace tarmac::gpu::nvml
