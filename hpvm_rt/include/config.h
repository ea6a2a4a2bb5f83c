// config.h - HPVM's generated config.h: HPVM programs include it for
// GLOBAL_KNOBS_FILE. hpvm_rt's knobs are built in (hpvm_rt/Ops.def), so the
// macro names no file that is read.
#ifndef HPVM_RT_CONFIG_H
#define HPVM_RT_CONFIG_H

#ifndef GLOBAL_KNOBS_FILE
/// Knob table location; informational only in hpvm_rt.
#define GLOBAL_KNOBS_FILE "hpvm_rt:builtin/Ops.def"
#endif

#endif // HPVM_RT_CONFIG_H
