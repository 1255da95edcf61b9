// SPDX-License-Identifier: MIT
// driver.loaded: the NVIDIA driver is there, its user-space libraries load, and they match the
// kernel module that is running (a driver upgraded without a reboot fails every CUDA call).
#include <algorithm>
#include <array>

#include "checks/check.hpp"
#include "checks/finding_parts.hpp"
#include "checks/gpu_common.hpp"
#include "core/text.hpp"

namespace preflight {
namespace driver_loaded_check {
namespace {

#define PREFLIGHT_REBOOT_FIX                                                                           \
  "Reboot the node (or, with no GPU process running, reload the module: `rmmod nvidia_uvm nvidia_drm " \
  "nvidia_modeset nvidia && modprobe nvidia`) after the driver upgrade, so the kernel module and the " \
  "libraries are the same release; in a container, the host's driver libraries must be mounted "       \
  "(NVIDIA container runtime), not a copy baked into the image."
#define PREFLIGHT_PERSISTENCE_FIX \
  "Run nvidia-persistenced on the node (`systemctl enable --now nvidia-persistenced`; or `nvidia-smi -pm 1` as root)."

// Neither library loads (no driver at all, or a kernel module without its libraries); {detail} is why
// libnvidia-ml.so.1 could not be loaded.
constexpr FindingSpec kNoDriver = {"driver.loaded/no-driver", Status::Fail,
                                   "no NVIDIA driver on this node: libnvidia-ml.so.1 and libcuda.so.1 cannot be loaded "
                                   "and no nvidia kernel module is loaded ({detail})",
                                   kNoDriverRemedy};
constexpr FindingSpec kModuleWithoutLibraries = {
    "driver.loaded/module-without-libraries", Status::Fail,
    "the nvidia kernel module {module} is loaded but its libraries are not here: libnvidia-ml.so.1 and libcuda.so.1 "
    "cannot be loaded ({detail})",
    kNoDriverRemedy};
// One library (or both, {library} names them) that failed; {why} is the helper's reason.
constexpr FindingSpec kLibraryMissing = {
    "driver.loaded/library-missing", Status::Fail, "{library} cannot be loaded ({why}){module_loaded}",
    "Install the driver's user-space libraries of the same release as the kernel module (Debian/Ubuntu: "
    "libnvidia-compute-<branch>, RHEL: nvidia-driver-cuda-libs), or in a container use the NVIDIA container runtime "
    "(`docker run --gpus all …`) so the host's libraries are mounted in."};
constexpr FindingSpec kHelperTimeout = {
    "driver.loaded/helper-timeout", Status::Fail, "{library}: {why}",
    "If the GPUs are only slow to initialise (persistence mode off: the first cuInit sets up every GPU, seconds each "
    "on a node of 8), give the helper longer with a larger --timeout (the driver helper gets 40% of it) and enable "
    "persistence mode (`systemctl enable --now nvidia-persistenced`, or `nvidia-smi -pm 1`). If it never finishes at "
    "any --timeout, the job's first GPU call hangs too: check `nvidia-smi` and `dmesg | grep -i -e NVRM -e Xid`; a "
    "wedged GPU needs `nvidia-smi -r` or a reboot."};
constexpr FindingSpec kHelperOutOfBudget = {
    "driver.loaded/out-of-budget", Status::Unknown, "{library}: {why}",
    "preflight's own budget ended it, not the driver: give the run the --timeout the message names (the later "
    "helpers need what the driver helper's cuInit took, each again), or enable persistence mode "
    "(`systemctl enable --now nvidia-persistenced`) so the GPUs initialise once."};
constexpr FindingSpec kHelperCrashed = {
    "driver.loaded/helper-crashed", Status::Fail, "{library}: {why}",
    "The job's first GPU call will do the same. Check `nvidia-smi` and `dmesg | grep -i -e NVRM -e Xid`; a CUDA "
    "library that does not belong to the running driver (a forward-compatibility libcuda or a copy in the image, see "
    "the loaded files) crashes like this: remove it from LD_LIBRARY_PATH; a wedged GPU needs `nvidia-smi -r` or a "
    "reboot."};
constexpr FindingSpec kLibraryVersionMismatch = {
    "driver.loaded/library-version-mismatch", Status::Fail,
    "driver/library version mismatch: {library} returned {error}{module_version}", PREFLIGHT_REBOOT_FIX};
#define PREFLIGHT_INIT_FAILED "{library} failed to initialise: {why}"
constexpr FindingSpec kModuleNotLoaded = {
    "driver.loaded/module-not-loaded", Status::Fail, PREFLIGHT_INIT_FAILED,
    "The libraries are there but the nvidia kernel module is not loaded: `modprobe nvidia` (as root; `dmesg | grep -i "
    "NVRM` says why it failed to load — often a kernel updated without rebuilding the driver's module: reinstall the "
    "driver or its DKMS package); in a container, run it with the NVIDIA container runtime (`docker run --gpus all "
    "…`)."};
constexpr FindingSpec kNoPermission = {
    "driver.loaded/no-permission", Status::Fail, PREFLIGHT_INIT_FAILED,
    "This user may not open /dev/nvidia*: check `ls -l /dev/nvidia*` (mode 0666, or the job's user in the device "
    "group) and the container's device cgroup."};
constexpr FindingSpec kFabricNotReady = {
    "driver.loaded/fabric-not-ready", Status::Fail, PREFLIGHT_INIT_FAILED,
    "On NVSwitch systems start the fabric manager (`systemctl start nvidia-fabricmanager`, same version as the driver) "
    "and wait for it to finish training the fabric."};
constexpr FindingSpec kInitFailed = {
    "driver.loaded/init-failed", Status::Fail, PREFLIGHT_INIT_FAILED,
    "Check `nvidia-smi` and `dmesg | grep -i NVRM` on the node; reinstall the driver if they fail too."};
#undef PREFLIGHT_INIT_FAILED
constexpr FindingSpec kHelperGarbage = {
    "driver.loaded/helper-garbage", Status::Fail, "{library}: the GPU helper's answer was garbage ({why})",
    "Run `nvidia-smi` and check `dmesg | grep -i NVRM`; if the driver is healthy, report it as a preflight bug with "
    "the --json output."};
constexpr FindingSpec kNotRead = {
    "driver.loaded/not-read", Status::Unknown, "{library} was not read: {why}",
    "Run preflight on the node itself so its GPU helper can load the driver's libraries."};
constexpr FindingSpec kModuleLibraryMismatch = {
    "driver.loaded/module-library-mismatch", Status::Fail,
    "driver/library version mismatch: kernel module {module}, libnvidia-ml {nvml}",
    "Reboot (or reload the nvidia module) after the driver upgrade. " PREFLIGHT_REBOOT_FIX};
constexpr FindingSpec kStaleLibcuda = {
    "driver.loaded/stale-libcuda", Status::Fail,
    "driver/library version mismatch: {path} is release {release} but the driver is {driver}",
    "Two driver releases are installed: remove the stale libcuda (check `ldconfig -p | grep libcuda` and "
    "LD_LIBRARY_PATH; a copy baked into a container image is the usual culprit) or reboot after the upgrade. CUDA "
    "refuses to start with CUDA_ERROR_SYSTEM_DRIVER_MISMATCH (803)."};
constexpr FindingSpec kSeveralLibcuda = {
    "driver.loaded/several-libcuda", Status::Warn, "{count} different libcuda files were loaded: {files}",
    "Keep one libcuda on the loader path (check LD_LIBRARY_PATH and `ldconfig -p | grep libcuda`): which one a process "
    "gets then depends on its environment, and the job may get another than preflight did."};
constexpr FindingSpec kPersistenceOff = {
    "driver.loaded/persistence-off", Status::Warn,
    "persistence mode is off on GPU {gpus}: every process start re-initialises the GPU (seconds per rank, and state "
    "lost between jobs)",
    PREFLIGHT_PERSISTENCE_FIX};
constexpr FindingSpec kPersistenceOffSlowInit = {
    "driver.loaded/persistence-off-slow-init", Status::Warn,
    "persistence mode is off on GPU {gpus}: cuInit took {init} here, and every process of the job pays it again (each "
    "start re-initialises the GPUs; state is lost between jobs)",
    PREFLIGHT_PERSISTENCE_FIX};
// The driver and what is noted of it: {cuda} " (CUDA 12.4)", {module} whether the kernel module
// matches, {compat} a forward-compatibility libcuda, {init} a slow cuInit, {loaded} the files.
constexpr FindingSpec kLoaded = {"driver.loaded/loaded", Status::Pass,
                                 "driver {driver}{cuda}, {module}{compat}{init}; {loaded}", ""};
#undef PREFLIGHT_PERSISTENCE_FIX
#undef PREFLIGHT_REBOOT_FIX

constexpr std::array kFindings = {kNoDriver,
                                  kModuleWithoutLibraries,
                                  kLibraryMissing,
                                  kHelperTimeout,
                                  kHelperOutOfBudget,
                                  kHelperCrashed,
                                  kLibraryVersionMismatch,
                                  kModuleNotLoaded,
                                  kNoPermission,
                                  kFabricNotReady,
                                  kInitFailed,
                                  kHelperGarbage,
                                  kNotRead,
                                  kModuleLibraryMismatch,
                                  kStaleLibcuda,
                                  kSeveralLibcuda,
                                  kPersistenceOff,
                                  kPersistenceOffSlowInit,
                                  kLoaded};

std::string file_name(std::string_view path) {
  const std::size_t slash = path.rfind('/');
  return std::string(slash == std::string_view::npos ? path : path.substr(slash + 1));
}

bool is_libcuda(std::string_view path) { return file_name(path).starts_with("libcuda.so"); }
bool is_compat(std::string_view path) { return path.find("/compat/") != std::string_view::npos; }

/// "libcuda.so.550.54.15" -> "550.54.15"; empty when the name carries no version.
std::string version_in_name(std::string_view path) {
  const std::string name = file_name(path);
  const std::size_t so = name.find(".so.");
  if (so == std::string::npos) return {};
  std::string v = name.substr(so + 4);
  if (v == "1" || v.find('.') == std::string::npos) return {};  // the soname link, not the release
  return v;
}

bool mentions(std::string_view text, std::string_view needle) { return text.find(needle) != std::string_view::npos; }

/// A first cuInit slower than this is worth naming (persistence mode off on a large node).
constexpr double kSlowInitSeconds = 5.0;

/// NVML_ERROR_LIB_RM_VERSION_MISMATCH (18) and CUDA_ERROR_SYSTEM_DRIVER_MISMATCH (803).
bool is_version_mismatch_error(std::string_view detail) {
  return mentions(detail, "MISMATCH") || mentions(detail, "mismatch") || mentions(detail, "(803)") ||
         mentions(detail, "(18)");
}

/// The finding of an initialisation error that is not a version mismatch, by the fix it needs.
const FindingSpec& init_error_finding(std::string_view detail) {
  if (mentions(detail, "DRIVER_NOT_LOADED")) return kModuleNotLoaded;
  if (mentions(detail, "NO_PERMISSION")) return kNoPermission;
  if (mentions(detail, "SYSTEM_NOT_READY") || mentions(detail, "(802)")) return kFabricNotReady;
  return kInitFailed;
}

Verdict run(const CheckContext& ctx) {
  const DriverFacts& d = ctx.facts.gpu.driver;
  VerdictBuilder b;
  b.evidence()["loaded_libraries"] = d.loaded_libraries;
  b.evidence()["kernel_module_version"] = d.kernel_module_version;
  b.evidence()["nvml_driver_version"] = d.nvml_driver_version;
  b.evidence()["cuda_driver_version"] = d.cuda_driver_version;
  if (!d.helper.empty()) b.evidence()["helper"] = d.helper;

  if (std::optional<NoDriver> none = find_no_driver(d)) {
    Verdict v = none->module
                    ? Verdict::of(kModuleWithoutLibraries, {{"module", *none->module}, {"detail", none->detail}},
                                  std::move(none->evidence))
                    : Verdict::of(kNoDriver, {{"detail", none->detail}}, std::move(none->evidence));
    v.evidence.update(b.evidence());
    return v;
  }

  const std::string* km = d.kernel_module_version.value();
  const std::string* nvml = d.nvml_driver_version.value();
  const int* cuda = d.cuda_driver_version.value();

  // The libraries: each must load and answer.
  struct Lib {
    std::string name;
    const ProbeError* err;
    std::string why;
  };
  std::vector<Lib> libs = {Lib{"libnvidia-ml.so.1 (NVML)", d.nvml_driver_version.error(), d.nvml_driver_version.why()},
                           Lib{"libcuda.so.1", d.cuda_driver_version.error(), d.cuda_driver_version.why()}};
  // One helper run that died (a deadline, a crash) fails both the same way: say it once.
  if (libs[0].err != nullptr && libs[1].err != nullptr && libs[0].err->code == libs[1].err->code &&
      libs[0].why == libs[1].why) {
    libs[0].name += " and libcuda.so.1";
    libs.pop_back();
  }
  for (const Lib& lib : libs) {
    if (lib.err == nullptr) continue;
    const nlohmann::json failed = {{"library", lib.name}, {"why", lib.why}};
    const auto with = [&failed](nlohmann::json more) {
      nlohmann::json p = failed;
      p.update(more);
      return p;
    };
    switch (lib.err->code) {
      case ProbeErrc::LibraryMissing:
        b.add(kLibraryMissing,
              with({{"module_loaded", part_if(km != nullptr, "; the nvidia kernel module {kernel_module} is loaded")},
                    {"kernel_module", km ? nlohmann::json(*km) : nlohmann::json()}}));
        break;
      case ProbeErrc::Timeout: b.add(kHelperTimeout, failed); break;
      case ProbeErrc::OutOfBudget: b.add(kHelperOutOfBudget, failed); break;
      case ProbeErrc::Crashed: b.add(kHelperCrashed, failed); break;
      case ProbeErrc::ApiError:
        if (is_version_mismatch_error(lib.err->detail)) {
          b.add(kLibraryVersionMismatch,
                with({{"error", lib.err->detail},
                      {"module_version", part_if(km != nullptr, " (kernel module {kernel_module})")},
                      {"kernel_module", km ? nlohmann::json(*km) : nlohmann::json()}}));
        } else {
          b.add(init_error_finding(lib.err->detail), failed);
        }
        break;
      case ProbeErrc::ParseError: b.add(kHelperGarbage, failed); break;
      default: b.add(kNotRead, failed); break;
    }
  }

  // Kernel module vs user space.
  if (km != nullptr && nvml != nullptr && trim(*km) != trim(*nvml)) {
    b.add(kModuleLibraryMismatch, {{"module", *km}, {"nvml", *nvml}});
  } else if (km == nullptr && nvml != nullptr) {
    b.evidence()["kernel_module_note"] = "kernel module version not readable (" + d.kernel_module_version.why() +
                                         "); NVML initialised, so a matching module is loaded";
  }

  // The files actually loaded.
  std::vector<std::string> cuda_files;
  for (const std::string& path : d.loaded_libraries) {
    if (is_libcuda(path) && std::find(cuda_files.begin(), cuda_files.end(), path) == cuda_files.end()) {
      cuda_files.push_back(path);
    }
  }
  const std::string driver_version = nvml ? *nvml : km ? *km : std::string();
  std::vector<std::string> compat;
  for (const std::string& path : cuda_files) {
    if (is_compat(path)) {
      compat.push_back(path);
      continue;
    }
    const std::string v = version_in_name(path);
    if (!v.empty() && !driver_version.empty() && v != driver_version) {
      b.add(kStaleLibcuda, {{"path", path}, {"release", v}, {"driver", driver_version}});
    }
  }
  if (cuda_files.size() > 1) b.add(kSeveralLibcuda, {{"count", cuda_files.size()}, {"files", join(cuda_files, ", ")}});
  if (!compat.empty()) b.evidence()["forward_compat_libcuda"] = compat;

  // How long the driver took to initialise: slow without persistence mode (every GPU is set up
  // again by each process), which is why the helpers' deadlines grow with --timeout.
  const std::optional<double> init_s = d.cuda_init_seconds;
  if (init_s) b.evidence()["cuda_init_seconds"] = *init_s;
  if (d.nvml_init_seconds) b.evidence()["nvml_init_seconds"] = *d.nvml_init_seconds;
  const bool slow_init = init_s && *init_s > kSlowInitSeconds;

  // Persistence mode (DCGM warns too): without it every process start re-initialises the GPUs.
  if (const std::vector<NvmlGpu>* gpus = d.nvml_gpus.value()) {
    std::vector<std::string> off;
    for (const NvmlGpu& g : *gpus) {
      if (g.persistence_mode.has_value() && !*g.persistence_mode) off.push_back(std::to_string(g.index));
    }
    if (!off.empty()) {
      b.evidence()["persistence_mode_off"] = off;
      if (slow_init) {
        b.add(kPersistenceOffSlowInit, {{"gpus", join(off, ", ")}, {"init", format_duration(*init_s)}});
      } else {
        b.add(kPersistenceOff, {{"gpus", join(off, ", ")}});
      }
    }
  }

  if (b.status() == Status::Pass) {
    const bool init_noted = init_s && *init_s >= 1.0;
    nlohmann::json params = {
        {"driver", driver_version},
        {"cuda", part_if(cuda != nullptr, " (CUDA {cuda_version})")},
        {"module",
         km ? "kernel module matches" : "kernel module version not readable (NVML works, so the module is loaded)"},
        {"compat", part_if(!compat.empty(), "; forward-compatibility libcuda in use")},
        {"init", part_if(init_noted, std::string("; cuInit took {init_time}") +
                                         (slow_init ? " (slow, but within the helper's deadline)" : ""))},
        {"loaded", d.loaded_libraries.empty()
                       ? std::string("no library file reported")
                       : "loaded " + join(cuda_files.empty() ? d.loaded_libraries : cuda_files, ", ")}};
    if (cuda) params["cuda_version"] = cuda_version_text(*cuda);
    if (init_noted) params["init_time"] = format_duration(*init_s);
    b.add(kLoaded, std::move(params));
  }
  return b.build();
}

constexpr std::string_view kExplain = R"EXPLAIN(What it reads
  From the contained GPU helper (a child process: a crash or hang of the driver cannot take
  preflight down): the libraries it loaded with dlopen (libnvidia-ml.so.1, libcuda.so.1, by soname
  through the normal loader search, so LD_LIBRARY_PATH counts) and their real paths; the user-space
  driver version (nvmlSystemGetDriverVersion) and the driver's CUDA version (cuDriverGetVersion);
  NVML's persistence mode of each GPU; how long nvmlInit_v2 and cuInit took (the helper times
  them). From the node: the kernel module's version
  (/proc/driver/nvidia/version, else /sys/module/nvidia/version).

Failures
  FAIL     no driver: neither library can be loaded and no nvidia kernel module is loaded.
  FAIL     the kernel module is loaded but a library cannot be loaded (a container started without
           the NVIDIA container runtime; user-space libraries not installed).
  FAIL     kernel module and libraries are different releases ("driver/library version mismatch:
           kernel module 535.104.05, libnvidia-ml 535.129.03"): the driver was upgraded and the node
           not rebooted. NVML answers NVML_ERROR_LIB_RM_VERSION_MISMATCH (18), CUDA
           CUDA_ERROR_SYSTEM_DRIVER_MISMATCH (803); every GPU call of the job fails.
  FAIL     a loaded libcuda.so.<release> (outside a /compat/ directory) is not the driver's release.
  FAIL     NVML or CUDA initialisation returns an error, named (NVML_ERROR_DRIVER_NOT_LOADED: the
           module is not loaded; NVML_ERROR_NO_PERMISSION: /dev/nvidia* not accessible; 802: fabric
           manager not running).
  FAIL     the helper crashed in the driver ("cuInit crashed with SIGSEGV after 0.2 s").
  FAIL     the helper did not finish within its deadline: the message names the deadline (the
           driver helper gets 40% of --timeout, no fixed cap), how long it ran, and that a
           larger --timeout gives it longer. A slow but healthy first cuInit (persistence mode
           off, many GPUs) needs a larger --timeout; one that never returns is a hung driver.
  WARN     two different libcuda files were loaded: the job may get either.
  WARN     persistence mode is off on a GPU (with the cuInit time when it took over 5 s: every
           process of the job pays it again).
  UNKNOWN  the helper did not run (nothing to judge). Under --sysroot no helper runs: a
           `preflight capture` tree holds the helper's report from the captured node (judged as
           if live); any other tree holds none ("not in the capture").
  PASS     names the driver, its CUDA version, every library file loaded and how long cuInit took
           when it took a second or more (a slow init that finishes within the deadline is not a
           failure); a forward-compatibility libcuda (/usr/local/cuda/compat) is reported as
           evidence — cuda.runtime judges whether it applies to the GPUs.
  SKIP     in the image profile: an image build has no driver (cuda.runtime judges the image against
           --target-driver).

Fix
  No driver: install it, or run the container with `--gpus all` (NVIDIA container runtime);
  build images with `preflight --profile image`. Mismatch: reboot, or reload the nvidia modules
  with no GPU process running. Module not loaded: `modprobe nvidia`, `dmesg | grep NVRM`.)EXPLAIN";

}  // namespace

extern const CheckSpec kDriverLoaded = {
    "driver.loaded",
    Scope::Node,
    "the NVIDIA driver is present, its libraries load and match the kernel module",
    kExplain,
    kInNode | kInJob,
    "an image build has no driver: the image is judged against --target-driver by cuda.runtime",
    &run,
    "gpu_driver",
    false,
    {},
    "the driver",
    nullptr,
    kFindings};

}  // namespace driver_loaded_check
}  // namespace preflight
