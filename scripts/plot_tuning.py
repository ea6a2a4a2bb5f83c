#!/usr/bin/python3
# plot_tuning.py RECORD.json OUT.png OUT.svg - draws the Pareto front of an
# approximation-tuning run from the tuner's JSON record (torch2hpvm-tune
# calls it after writing the record).
#
# x = QoS loss (settings.metric, points or relative %), y = speedup over the
# exact configuration. Series: every configuration the search evaluated
# (calibrated prediction, or measured on the profile subset in empirical
# mode), the validated candidates measured on the tune set (front as a step
# line), their test-set losses (red when the test loss is markedly worse),
# the names of the written configurations, the QoS-loss thresholds and the
# exact configuration. When the record has a sensitivity report, a panel
# below shows per fused node the time its best knob saves (share of a batch)
# and that knob's QoS loss.
#
# Needs python3-matplotlib (Agg backend, no display). The output is
# deterministic: the same record gives the same PNG and SVG bytes. Both files
# are written atomically. A missing or malformed record is reported as one
# line "plot_tuning.py: FILE: what is wrong" with exit status 1.
import json
import math
import os
import sys
import tempfile

PROG = "plot_tuning.py"
TOOL = "torch2hpvm plot_tuning.py"


class PlotError(Exception):
    """A problem reported as 'plot_tuning.py: WHERE: MESSAGE'."""

    def __init__(self, where, message):
        super().__init__(message)
        self.where = where
        self.message = message


# --- reading the record -----------------------------------------------------


class Record:
    """Typed access to the JSON record; errors name the offending path."""

    def __init__(self, path):
        self.path = path
        try:
            with open(path, "r", encoding="utf-8") as f:
                text = f.read()
        except FileNotFoundError:
            raise PlotError(path, "no such file")
        except IsADirectoryError:
            raise PlotError(path, "is a directory, not a JSON record")
        except PermissionError:
            raise PlotError(path, "permission denied")
        except UnicodeDecodeError:
            raise PlotError(path, "not UTF-8 text, not a JSON record")
        except OSError as e:
            raise PlotError(path, e.strerror or str(e))
        try:
            self.root = json.loads(text)
        except ValueError as e:
            raise PlotError(path, "invalid JSON: %s" % e)
        if not isinstance(self.root, dict):
            raise PlotError(path, "not a tuning record (top level is not an "
                            "object)")

    def fail(self, what):
        raise PlotError(self.path, what)

    def get(self, obj, key, kind, where, default=None, required=True):
        """obj[key] checked against kind ('object', 'list', 'string',
        'bool', 'int', 'number'; 'number' also accepts null = NaN)."""
        if not isinstance(obj, dict) or key not in obj:
            if required:
                self.fail("not a tuning record (no %s)" % where)
            return default
        v = obj[key]
        ok = {
            "object": lambda x: isinstance(x, dict),
            "list": lambda x: isinstance(x, list),
            "string": lambda x: isinstance(x, str),
            "bool": lambda x: isinstance(x, bool),
            "int": lambda x: isinstance(x, int) and not isinstance(x, bool),
            "number": lambda x: x is None or (isinstance(x, (int, float))
                                              and not isinstance(x, bool)),
        }[kind](v)
        if not ok:
            self.fail("%s is not %s" % (where, "an " + kind if kind in
                                        ("object", "int") else "a " + kind))
        if kind == "number":
            # nlohmann::json writes NaN and infinities as null.
            return float("nan") if v is None else float(v)
        return v

    def point(self, obj, key, where, required=True):
        """obj[key] = {"loss": x, "speedup": y} -> (x, y) or None."""
        p = self.get(obj, key, "object", where, required=required)
        if p is None:
            return None
        return (self.get(p, "loss", "number", where + ".loss"),
                self.get(p, "speedup", "number", where + ".speedup"))


def finite(p):
    return p is not None and math.isfinite(p[0]) and math.isfinite(p[1])


def read_record(path):
    r = Record(path)
    root = r.root
    d = {}
    settings = r.get(root, "settings", "object", "'settings' object")
    d["model"] = r.get(root, "model", "string", "'model'", "model",
                       required=False)
    q = settings.get("qos_loss", [])
    if not isinstance(q, list):
        q = [q]
    qos = []
    for i, v in enumerate(q):
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            r.fail("settings.qos_loss[%d] is not a number" % i)
        if math.isfinite(v):
            qos.append(float(v))
    d["qos"] = sorted(set(qos))
    d["metric"] = r.get(settings, "metric", "string", "settings.metric",
                        "qos", required=False)
    d["relative"] = r.get(settings, "relative", "bool", "settings.relative",
                          False, required=False)
    d["mode"] = r.get(settings, "mode", "string", "settings.mode",
                      "predictive", required=False)
    d["batch"] = r.get(settings, "batch_size", "int", "settings.batch_size",
                       None, required=False)
    d["threads"] = r.get(settings, "threads", "int", "settings.threads",
                         None, required=False)

    search = r.get(root, "search", "object", "'search' object")
    points = r.get(search, "points", "list", "search.points list")
    d["search"] = []
    for i, p in enumerate(points):
        where = "search.points[%d]" % i
        if not isinstance(p, dict):
            r.fail("%s is not an object" % where)
        d["search"].append(r.point(p, "calibrated", where + ".calibrated"))

    validated = r.get(root, "validated", "list", "'validated' list")
    d["validated"] = []
    for i, c in enumerate(validated):
        where = "validated[%d]" % i
        if not isinstance(c, dict):
            r.fail("%s is not an object" % where)
        tune = r.point(c, "tune", where + ".tune")
        test = r.point(c, "test", where + ".test", required=False)
        if test is not None:
            # The test set is run once, for its QoS only: the test point is
            # (test loss, tune speedup), as in the written configuration.
            test = (test[0], tune[1])
        d["validated"].append({
            "tune": tune,
            "test": test,
            "on_front": r.get(c, "on_front", "bool", where + ".on_front",
                              False, required=False),
            "worse": r.get(c, "test_worse_than_tune", "bool",
                           where + ".test_worse_than_tune", False,
                           required=False),
        })

    written = r.get(root, "written", "list", "'written' list", [],
                    required=False)
    d["written"] = []
    for i, w in enumerate(written):
        where = "written[%d]" % i
        if not isinstance(w, dict):
            r.fail("%s is not an object" % where)
        name = r.get(w, "name", "string", where + ".name")
        cand = r.get(w, "candidate", "int", where + ".candidate")
        if not 0 <= cand < len(d["validated"]):
            r.fail("%s.candidate %d is not an index into validated (%d "
                   "entries)" % (where, cand, len(d["validated"])))
        d["written"].append((name, cand))

    cal = r.get(root, "calibration", "object", "'calibration' object", {},
                required=False)
    d["cal_samples"] = r.get(cal, "samples", "int", "calibration.samples", 0,
                             required=False)
    sens = r.get(root, "sensitivity", "list", "'sensitivity' list", [],
                 required=False)
    d["sensitivity"] = []
    for i, row in enumerate(sens):
        where = "sensitivity[%d]" % i
        if not isinstance(row, dict):
            r.fail("%s is not an object" % where)
        node = r.get(row, "node", "int", where + ".node")
        kept = r.get(row, "keep_exact", "bool", where + ".keep_exact", False,
                     required=False)
        if row.get("knob") is None:
            d["sensitivity"].append((node, None, 0.0, 0.0, kept))
            continue
        d["sensitivity"].append((
            node,
            r.get(row, "knob_name", "string", where + ".knob_name"),
            r.get(row, "saving_share", "number", where + ".saving_share"),
            r.get(row, "loss", "number", where + ".loss"), kept))
    d["loss_corr"] = r.get(cal, "loss_spearman", "number",
                           "calibration.loss_spearman", float("nan"),
                           required=False)
    d["speedup_corr"] = r.get(cal, "speedup_spearman", "number",
                              "calibration.speedup_spearman", float("nan"),
                              required=False)
    return d


# --- drawing ----------------------------------------------------------------

GREY = "#b4b4b4"
TUNE = "#1f5fa8"
TEST = "#2a9d48"
WORSE = "#d62728"


def fmt_corr(v):
    return "%.2f" % v if math.isfinite(v) else "n/a"


def plural(n, word):
    return "%d %s%s" % (n, word, "" if n == 1 else "s")


def pad_range(lo, hi, frac, least):
    """[lo, hi] widened by frac of its span, and to at least `least`."""
    span = hi - lo
    lo, hi = lo - frac * span, hi + frac * span
    if hi - lo < least:
        mid = (lo + hi) / 2
        lo, hi = mid - least / 2, mid + least / 2
    return lo, hi


def draw(d):
    from matplotlib.figure import Figure
    from matplotlib.lines import Line2D

    # The sensitivity panel adds 2.8 inches below the front; positions are
    # those of the 5.5-inch figure without it, moved up.
    sens = d["sensitivity"]
    extra = 2.8 if sens else 0.0
    height = 5.5 + extra

    def fy(v):
        return (v * 5.5 + extra) / height

    fig = Figure(figsize=(8, height), dpi=120)
    ax = fig.add_axes([0.085, fy(0.105), 0.595, 0.765 * 5.5 / height])
    if sens:
        draw_sensitivity(fig.add_axes([0.085, 0.55 / height, 0.595,
                                       1.7 / height]), sens)

    search = [p for p in d["search"] if finite(p)]
    cands = d["validated"]
    tune = [c["tune"] for c in cands if finite(c["tune"])]
    test = [(c["tune"], c["test"], c["worse"]) for c in cands
            if finite(c["tune"]) and finite(c["test"])]

    # x range: a little beyond 1.6 x the largest QoS-loss threshold (or the
    # measured losses when there is no threshold); left edge at or below 0.
    measured_x = [p[0] for p in tune] + [t[1][0] for t in test]
    if d["qos"]:
        right = max(d["qos"]) * 1.6
    else:
        right = max([0.0] + measured_x)
    if right <= 0:
        right = 1.0
    right *= 1.04
    left = min([0.0] + [x for x in measured_x + [p[0] for p in search]
                        if x >= -0.25 * right])
    left -= 0.03 * (right - left)

    def visible(p):
        return left <= p[0] <= right

    # y range from what is visible (clipped points do not stretch it).
    ys = [1.0] + [p[1] for p in search if visible(p)]
    ys += [p[1] for p in tune if visible(p)]
    ys += [t[1][1] for t in test if visible(t[1])]
    bottom, top = pad_range(min(ys), max(ys), 0.08, 0.2)

    # 5. references: exact speedup, QoS-loss thresholds.
    ax.axhline(1.0, color="0.35", linewidth=0.8, linestyle=":", zorder=1)
    for i, q in enumerate(d["qos"]):
        ax.axvline(q, color="0.45", linewidth=0.9, linestyle="--", zorder=1,
                   label="QoS-loss threshold" if i == 0 else None)
        if left <= q <= right:
            ax.annotate("%g" % q, xy=(q, 1.0), xycoords=("data", "axes "
                                                          "fraction"),
                        xytext=(2, -2), textcoords="offset points",
                        ha="left", va="top", fontsize=7, color="0.35")

    # 1. every configuration the search evaluated.
    search_label = ("measured by the search (tune subset)"
                    if d["mode"] == "empirical"
                    else "predicted (tune, calibrated)")
    if search:
        ax.scatter([p[0] for p in search], [p[1] for p in search], s=7,
                   color=GREY, linewidths=0, zorder=2, label=search_label)

    # 2. validated candidates on the tune set; the measured front as steps.
    front = sorted((c["tune"] for c in cands
                    if c["on_front"] and finite(c["tune"])))
    if front:
        ax.step([p[0] for p in front], [p[1] for p in front], where="post",
                color=TUNE, linewidth=1.2, alpha=0.8, zorder=3,
                label="measured front (tune)")
    if tune:
        ax.scatter([p[0] for p in tune], [p[1] for p in tune], s=38,
                   facecolors="white", edgecolors=TUNE, linewidths=1.4,
                   zorder=5, label="tune set, measured")

    # 3. test-set losses, joined to their tune points.
    for t, s, worse in test:
        ax.plot([t[0], s[0]], [t[1], s[1]], color=WORSE if worse else TEST,
                linewidth=0.9, linestyle=(0, (3, 1.5)), zorder=4)
    ok = [s for _, s, worse in test if not worse]
    bad = [s for _, s, worse in test if worse]
    if ok:
        ax.scatter([p[0] for p in ok], [p[1] for p in ok], s=30, color=TEST,
                   edgecolors="white", linewidths=0.5, zorder=6,
                   label="test set")
    if bad:
        ax.scatter([p[0] for p in bad], [p[1] for p in bad], s=30,
                   color=WORSE, edgecolors="white", linewidths=0.5, zorder=6,
                   label="test set, worse than tune")

    # 5. the exact configuration.
    ax.scatter([0.0], [1.0], marker="*", s=160, color="#f2c12e",
               edgecolors="black", linewidths=0.7, zorder=7, label="exact")

    ax.set_xlim(left, right)
    ax.set_ylim(bottom, top)

    # 4. names of the written configurations. Each label takes the first of
    # a few positions around its point that stays inside the axes and
    # overlaps the fewest labels already placed and measured markers
    # (offsets in points, boxes in pixels).
    from matplotlib.textpath import TextPath
    px = fig.dpi / 72.0
    frame = ax.bbox.extents
    offsets = [(6, 4, "left", "bottom"), (6, -4, "left", "top"),
               (-6, 4, "right", "bottom"), (-6, -4, "right", "top"),
               (0, 9, "center", "bottom"), (0, -9, "center", "top"),
               (10, 0, "left", "center_baseline"),
               (-10, 0, "right", "center_baseline")]
    markers = [ax.transData.transform(p) for p in
               tune + [t[1] for t in test] + [(0.0, 1.0)] if visible(p)]
    labels = []
    for name, cand in d["written"]:
        c = cands[cand]
        p = c["test"] if finite(c["test"]) else c["tune"]
        if finite(p) and visible(p):
            labels.append((p, name))
    labels.sort(key=lambda e: (e[0][0], e[0][1], e[1]))
    placed = []

    def overlaps(box, other):
        return (box[0] < other[2] and other[0] < box[2] and
                box[1] < other[3] and other[1] < box[3])

    for (x, y), name in labels:
        cx, cy = ax.transData.transform((x, y))
        w = (TextPath((0, 0), name, size=8).get_extents().width + 5) * px
        h = 11 * px
        best = None
        for rank, (dx, dy, ha, va) in enumerate(offsets):
            x0 = cx + dx * px - {"left": 0, "center": w / 2,
                                 "right": w}[ha]
            y0 = cy + dy * px - {"bottom": 0, "top": h,
                                 "center_baseline": h / 2}[va]
            box = (x0, y0, x0 + w, y0 + h)
            outside = not (box[0] >= frame[0] and box[1] >= frame[1] and
                           box[2] <= frame[2] and box[3] <= frame[3])
            r = 4 * px
            cost = (100 * outside +
                    10 * sum(overlaps(box, b) for b in placed) +
                    sum(overlaps(box, (mx - r, my - r, mx + r, my + r))
                        for mx, my in markers), rank)
            if best is None or cost < best[0]:
                best = (cost, box, dx, dy, ha, va)
        placed.append(best[1])
        ax.annotate(name, xy=(x, y), xytext=best[2:4],
                    textcoords="offset points", ha=best[4], va=best[5],
                    fontsize=8, color="0.1", zorder=8,
                    gid="config-" + "".join(ch if ch.isalnum() or ch in "-_."
                                            else "_" for ch in name),
                    bbox=dict(boxstyle="round,pad=0.15", facecolor="white",
                              edgecolor="none", alpha=0.75))

    # Clipped points, said in the legend.
    def beyond(ps):
        return sum(1 for p in ps if not visible(p))

    n_search = beyond(search)
    n_meas = beyond(tune) + beyond([t[1] for t in test])
    clip_notes = []
    if n_search:
        clip_notes.append(plural(n_search, "search point"))
    if n_meas:
        clip_notes.append(plural(n_meas, "measured point"))

    unit = "relative %" if d["relative"] else "points"
    ax.set_xlabel("QoS loss, %s (%s)" % (d["metric"], unit))
    ax.set_ylabel("speedup over exact (x)")
    ax.grid(True, color="0.92", linewidth=0.6, zorder=0)
    ax.set_axisbelow(True)

    handles, names = ax.get_legend_handles_labels()
    order = sorted(range(len(names)),
                   key=lambda i: names[i] == "QoS-loss threshold")
    handles = [handles[i] for i in order]
    names = [names[i] for i in order]
    if clip_notes:
        handles.append(Line2D([], [], linestyle="none"))
        names.append("not shown (loss > %.3g):\n%s" % (right,
                                                       ", ".join(clip_notes)))
    ax.legend(handles, names, loc="upper left", bbox_to_anchor=(1.02, 1.0),
              borderaxespad=0.0, fontsize=8, frameon=False,
              handletextpad=0.5, labelspacing=0.7)

    title = "%s: %s tuning" % (d["model"], d["mode"])
    if d["batch"] is not None:
        title += ", batch %d" % d["batch"]
    if d["threads"] is not None:
        title += ", %s" % plural(d["threads"], "thread")
    fig.text(0.5, fy(0.965), title, ha="center", va="top", fontsize=12)
    if d["cal_samples"] > 0:
        fig.text(0.5, fy(0.918),
                 "prediction: loss rank corr %s, speedup rank corr %s "
                 "(%d measured)" % (fmt_corr(d["loss_corr"]),
                                    fmt_corr(d["speedup_corr"]),
                                    d["cal_samples"]),
                 ha="center", va="top", fontsize=9, color="0.3")
    return fig


def draw_sensitivity(ax, rows):
    """Per node: its best knob's time saving (bar, % of a batch) and loss
    (written above the bar); nodes kept exact or with no knob saving time
    are marked."""
    nodes = [r[0] for r in rows]
    shares = [100 * r[2] if math.isfinite(r[2]) else 0.0 for r in rows]
    ax.bar(nodes, shares, width=0.7, color=TUNE, alpha=0.85, zorder=3)
    top = max(shares + [1.0])
    ax.set_ylim(0, top * 1.3)
    for node, knob, share, loss, kept in rows:
        if knob is None:
            text = "exact" if kept else "-"
            y = 0
        else:
            text = "%s\n%.2f" % (knob, loss)
            y = 100 * share if math.isfinite(share) else 0
        ax.annotate(text, xy=(node, max(y, 0)), xytext=(0, 2),
                    textcoords="offset points", ha="center", va="bottom",
                    fontsize=6, color="0.25")
    ax.set_xlabel("fused node (best knob, its QoS loss above the bar)")
    ax.set_ylabel("time saved\n(% of a batch)")
    ax.set_xlim(min(nodes) - 0.6, max(nodes) + 0.6)
    if len(nodes) <= 40:
        ax.set_xticks(nodes)
        ax.tick_params(axis="x", labelsize=7)
    ax.grid(True, axis="y", color="0.92", linewidth=0.6, zorder=0)
    ax.set_axisbelow(True)
    ax.set_title("sensitivity: per node, the knob that saves most alone",
                 fontsize=9, loc="left")
    ax.set_gid("sensitivity")


def save_atomic(fig, path, fmt, **kw):
    """Writes fig to path via a temporary file in the same directory."""
    directory = os.path.dirname(os.path.abspath(path))
    try:
        fd, tmp = tempfile.mkstemp(prefix="." + os.path.basename(path) + ".",
                                   suffix=".tmp", dir=directory)
    except OSError as e:
        raise PlotError(path, "cannot create a file in %s: %s"
                        % (directory, e.strerror or e))
    try:
        with os.fdopen(fd, "wb") as f:
            fig.savefig(f, format=fmt, **kw)
        os.chmod(tmp, 0o644 & ~current_umask())
        os.replace(tmp, path)
    except OSError as e:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise PlotError(path, "cannot write: %s" % (e.strerror or e))
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def current_umask():
    mask = os.umask(0)
    os.umask(mask)
    return mask


def main(argv):
    if len(argv) != 4:
        sys.stderr.write("usage: %s RECORD.json OUT.png OUT.svg\n" % PROG)
        return 2
    record, png, svg = argv[1:]
    try:
        d = read_record(record)
        try:
            import matplotlib
            matplotlib.use("Agg")
        except ImportError:
            raise PlotError(record, "cannot plot: matplotlib is not "
                            "installed (apt-get install python3-matplotlib)")
        # Independent of any matplotlibrc; deterministic SVG ids.
        matplotlib.rcdefaults()
        matplotlib.rcParams["svg.hashsalt"] = "torch2hpvm"
        matplotlib.rcParams["svg.fonttype"] = "path"
        matplotlib.rcParams["path.simplify"] = True
        fig = draw(d)
        save_atomic(fig, png, "png", dpi=120,
                    metadata={"Software": TOOL})
        save_atomic(fig, svg, "svg",
                    metadata={"Date": None, "Creator": TOOL})
    except PlotError as e:
        sys.stderr.write("%s: %s: %s\n" % (PROG, e.where, e.message))
        return 1
    except Exception as e:  # a bug or a record we did not foresee
        msg = " ".join(str(e).split()) or type(e).__name__
        sys.stderr.write("%s: %s: cannot plot: %s: %s\n"
                         % (PROG, record, type(e).__name__, msg))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
