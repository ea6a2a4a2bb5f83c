/* Library.h - the C entry points of a generated program's shared library
 * (OUT/build/lib<model>.so): open the model, choose its configuration and
 * thread count, run batches of images held in memory. Python's
 * torch2hpvm.load() calls them through ctypes.
 *
 * The library runs the same code as the program (the generated HPVM-C and
 * hpvm_rt), so its outputs are the program's. Calls are serialized: one
 * model runs at a time in a process. Every function that can fail returns
 * NULL or a nonzero status and leaves the message in hpvm_rt_last_error();
 * none aborts on a user error. */
#ifndef HPVM_RT_LIBRARY_H
#define HPVM_RT_LIBRARY_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/** The version of these entry points; changes when any of them does. */
#define HPVM_RT_LIBRARY_VERSION 3

/** An opened model (weights loaded, configuration chosen). */
typedef struct hpvm_rt_model hpvm_rt_model;

/** HPVM_RT_LIBRARY_VERSION of the library. */
int hpvm_rt_library_version(void);

/** The model's name (the exported model's file stem). */
const char* hpvm_rt_model_name(void);

/** The configuration file baked in at export: "" for none; a relative
 * path is relative to the model directory (as hpvm_rt_set_config() with a
 * NULL file resolves it). (Version 3.) */
const char* hpvm_rt_default_config(void);

/** The instruction-set extensions the library's hpvm_rt was compiled to
 * assume (its -march baseline), space-separated ("avx2 fma bmi bmi2" for
 * the portable build); hpvm_rt_open() refuses a CPU that lacks one.
 * (Version 3.) */
const char* hpvm_rt_build_features(void);

/** The model's per-image input shape and its number of classes (outputs
 * per image). Any pointer may be NULL. */
void hpvm_rt_model_shape(int64_t* channels, int64_t* height, int64_t* width,
                         int64_t* classes);

/** The model's graph outputs (1 for a classifier; a segmentation network
 * with an auxiliary head has 2). */
int hpvm_rt_model_outputs(void);

/** Output \p k's per-image shape: its rank (1 to 3; -1 when \p k is not an
 * output) and, when \p dims is not NULL, its dims in dims[0 .. rank-1]
 * (classes; or C x H x W). */
int hpvm_rt_model_output(int k, int64_t* dims);

/** Output \p k's ONNX name ("" when \p k is not an output). */
const char* hpvm_rt_model_output_name(int k);

/** Opens the model: loads its weights from \p model_dir (the export's
 * output directory; NULL: the directory baked in at export, relative to
 * the library) and runs exact FP32 until hpvm_rt_set_config(). Weights are
 * loaded once per process: a second open shares them (from the same
 * directory only). Returns NULL on error. */
hpvm_rt_model* hpvm_rt_open(const char* model_dir);

/** Chooses the configuration, as the program's options do: \p config_file
 * (-c; NULL: the one baked in at export, if any; "" : none), \p selector
 * (--config NAME|INDEX; NULL: the first block), or, when \p qos_loss is
 * not negative, the block --qos-loss would take (exact FP32 when none
 * qualifies); \p calibration (--calibration; NULL: the configuration
 * file's companion <stem>.calib.txt when present). With no configuration
 * file, the model runs exact FP32. Returns 0, or nonzero on error (the
 * previous choice stays). */
int hpvm_rt_set_config(hpvm_rt_model* model, const char* config_file,
                       const char* selector, double qos_loss,
                       const char* calibration);

/** A description of the chosen configuration ("exact FP32 (no
 * configuration)", "configuration 'conf1' of FILE"), valid until the next
 * call on \p model. */
const char* hpvm_rt_config_description(hpvm_rt_model* model);

/** Runs \p model with \p threads threads (0: all cores, as --threads 0).
 * Returns 0, or nonzero on error. */
int hpvm_rt_set_threads(hpvm_rt_model* model, int threads);

/** Runs \p n images (float32, N x C x H x W, contiguous; read, never
 * written) through the model and writes n x classes float32 scores to
 * \p outputs (a single-output model's; hpvm_rt_run_outputs() writes
 * several). Any \p n >= 1 works, whatever batch size the program was
 * exported with. Returns 0, or nonzero on error. */
int hpvm_rt_run(hpvm_rt_model* model, const float* images, int64_t n,
                float* outputs);

/** Runs \p n images as hpvm_rt_run() and writes every graph output:
 * output k's n x (its per-image values) float32 to \p outputs[k]. Returns
 * 0, or nonzero on error. */
int hpvm_rt_run_outputs(hpvm_rt_model* model, const float* images, int64_t n,
                        float* const* outputs);

/** The program's own time, in seconds, of \p model's last successful run:
 * from the launch to the output request, what the program's own per-batch
 * timer covers (its --json batch_times_ms), without the call's checks,
 * input wrapping, output copies and freeing. -1 before the first run or for
 * a NULL \p model. (Version 3; a library built before 2026-12-01 lacks
 * it.) */
double hpvm_rt_last_run_seconds(hpvm_rt_model* model);

/** Closes \p model (NULL is ignored). The weights stay loaded for the
 * next open. */
void hpvm_rt_close(hpvm_rt_model* model);

/** The message of the calling thread's last failed call ("" if none). */
const char* hpvm_rt_last_error(void);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* HPVM_RT_LIBRARY_H */
