// FormatTest.cpp - every reader on real or NumPy-written files, outputs
// byte-checked against NumPy's own reading and arithmetic.
#include "DatasetTestUtil.h"

#include "hpvm_ds/Convert.h"
#include "hpvm_ds/Dataset.h"

using namespace hpvm::ds;
using namespace hpvm::ds::test;

TEST_CASE("Datasets: Fashion-MNIST t10k IDX.gz converts byte-exactly to "
          "NumPy's float32 tune/test halves") {
  TempDir dir;
  ToolRun r =
      runTool({"convert", kFashion + "/t10k-images-idx3-ubyte.gz",
               kFashion + "/t10k-labels-idx1-ubyte.gz", "--scale", "1/255",
               "--normalize", "0.5,0.5", "-q", "-o", dir / "out"});
  REQUIRE_MESSAGE(r.code == 0, r.err);
  CHECK(r.out.empty());
  runPython(dir, R"(
img = fashion('t10k-images-idx3-ubyte.gz', 16)
lab = fashion('t10k-labels-idx1-ubyte.gz', 8).astype('<i4')
x = img.reshape(10000, 1, 28, 28).astype(np.float32) / np.float32(255)
x = (x - np.float32(0.5)) / np.float32(0.5)
x[:5000].tofile('tune_x'); x[5000:].tofile('test_x')
lab[:5000].tofile('tune_y'); lab[5000:].tofile('test_y')
)");
  CHECK(readFile(dir / "out/tune_input.bin") == readFile(dir / "tune_x"));
  CHECK(readFile(dir / "out/test_input.bin") == readFile(dir / "test_x"));
  CHECK(readFile(dir / "out/tune_labels.bin") == readFile(dir / "tune_y"));
  CHECK(readFile(dir / "out/test_labels.bin") == readFile(dir / "test_y"));
  CHECK(listDir(dir / "out") ==
        std::vector<std::string>{"dataset.json", "test_input.bin",
                                 "test_labels.bin", "tune_input.bin",
                                 "tune_labels.bin"});
}

TEST_CASE("Datasets: uncompressed IDX gives the same bytes as gzip") {
  TempDir dir;
  runPython(dir, R"(
d = '/usr/share/datasets/fashion-mnist/'
open('imgs', 'wb').write(gzip.open(d + 't10k-images-idx3-ubyte.gz').read())
open('labs', 'wb').write(gzip.open(d + 't10k-labels-idx1-ubyte.gz').read())
)");
  auto a = runTool({"convert", dir / "imgs", dir / "labs", "--limit", "300",
                    "--name", "x", "-q", "-o", dir / "a"});
  auto b = runTool({"convert", kFashion + "/t10k-images-idx3-ubyte.gz",
                    kFashion + "/t10k-labels-idx1-ubyte.gz", "--limit", "300",
                    "--name", "x", "-q", "-o", dir / "b"});
  REQUIRE(a.code == 0);
  REQUIRE(b.code == 0);
  CHECK(readFile(dir / "a/x_input.bin").size() == 300 * 784 * 4);
  CHECK(readFile(dir / "a/x_input.bin") == readFile(dir / "b/x_input.bin"));
  CHECK(readFile(dir / "a/x_labels.bin") == readFile(dir / "b/x_labels.bin"));
}

TEST_CASE("Datasets: CIFAR-10 batches concatenate, normalise per channel") {
  TempDir dir;
  runPython(dir, R"(
rng = np.random.default_rng(5)
recs = []
for name, n in (('data_batch_1.bin', 7), ('data_batch_2.bin', 5)):
    lab = rng.integers(0, 10, n, dtype=np.uint8)
    px = rng.integers(0, 256, (n, 3072), dtype=np.uint8)
    np.concatenate([lab[:, None], px], 1).tofile(name)
    recs.append((lab, px))
lab = np.concatenate([r[0] for r in recs])
px = np.concatenate([r[1] for r in recs])
m = np.array([0.4914, 0.4822, 0.4465], np.float32)[None, :, None, None]
s = np.array([0.247, 0.243, 0.261], np.float32)[None, :, None, None]
x = (px.reshape(12, 3, 32, 32).astype(np.float32) / np.float32(255) - m) / s
x.tofile('x'); lab.astype('<i4').tofile('y')
)");
  ToolRun r = runTool({"convert", dir / "data_batch_1.bin",
                       dir / "data_batch_2.bin", "--scale", "1/255",
                       "--normalize", "0.4914,0.4822,0.4465,0.247,0.243,0.261",
                       "--name", "all", "-o", dir / "out"});
  REQUIRE_MESSAGE(r.code == 0, r.err);
  CHECK(r.out.find("12 images of 3x32x32 (cifar10, uint8)") !=
        std::string::npos);
  CHECK(readFile(dir / "out/all_input.bin") == readFile(dir / "x"));
  CHECK(readFile(dir / "out/all_labels.bin") == readFile(dir / "y"));
}

TEST_CASE("Datasets: CIFAR-100 reads fine labels, or coarse with --coarse") {
  TempDir dir;
  runPython(dir, R"(
rng = np.random.default_rng(9)
coarse = rng.integers(0, 20, 6, dtype=np.uint8)
fine = rng.integers(0, 100, 6, dtype=np.uint8)
px = rng.integers(0, 256, (6, 3072), dtype=np.uint8)
np.concatenate([coarse[:, None], fine[:, None], px], 1).tofile('test.bin')
px.astype(np.float32).tofile('x')
fine.astype('<i4').tofile('fine'); coarse.astype('<i4').tofile('coarse')
)");
  REQUIRE(runTool({"convert", dir / "test.bin", "--name", "f", "-q", "-o",
                   dir / "out"})
              .code == 0);
  REQUIRE(runTool({"convert", dir / "test.bin", "--coarse", "--name", "c", "-q",
                   "-o", dir / "out"})
              .code == 0);
  CHECK(readFile(dir / "out/f_input.bin") == readFile(dir / "x"));
  CHECK(readFile(dir / "out/f_labels.bin") == readFile(dir / "fine"));
  CHECK(readFile(dir / "out/c_labels.bin") == readFile(dir / "coarse"));
}

TEST_CASE("Datasets: .npy uint8 NHWC, float64 NCHW and float32 N,H,W") {
  TempDir dir;
  runPython(dir, R"(
rng = np.random.default_rng(3)
a = rng.integers(0, 256, (4, 5, 6, 3), dtype=np.uint8)
np.save('a.npy', a); np.save('la.npy', np.array([3, 1, 4, 1], np.int64))
(a.transpose(0, 3, 1, 2).astype(np.float32) * np.float32(2)).tofile('ax')
b = rng.standard_normal((6, 2, 3, 3))
np.save('b.npy', b); np.save('lb.npy', np.arange(6, dtype=np.uint8))
b.astype(np.float32).tofile('bx')
c = rng.standard_normal((2, 4, 4)).astype(np.float32)
np.save('c.npy', c); np.save('lc.npy', np.array([[7], [0]], np.int32))
((c - np.float32(0.25)) / np.float32(2)).tofile('cx')
)");
  REQUIRE(runTool({"convert", dir / "a.npy", dir / "la.npy", "--layout", "nhwc",
                   "--scale", "2", "--name", "a", "-q", "-o", dir / "out"})
              .code == 0);
  REQUIRE(runTool({"convert", dir / "lb.npy", dir / "b.npy", "--split",
                   "p=4,q=2", "-q", "-o", dir / "out"})
              .code == 0);
  REQUIRE(runTool({"convert", dir / "c.npy", dir / "lc.npy", "--normalize",
                   "0.25,2", "--name", "c", "-q", "-o", dir / "out"})
              .code == 0);
  CHECK(readFile(dir / "out/a_input.bin") == readFile(dir / "ax"));
  CHECK(readFile(dir / "out/a_labels.bin") ==
        std::string("\3\0\0\0\1\0\0\0\4\0\0\0\1\0\0\0", 16));
  CHECK(readFile(dir / "out/p_input.bin") + readFile(dir / "out/q_input.bin") ==
        readFile(dir / "bx"));
  CHECK(readFile(dir / "out/q_labels.bin") ==
        std::string("\4\0\0\0\5\0\0\0", 8));
  CHECK(readFile(dir / "out/c_input.bin") == readFile(dir / "cx"));
  CHECK(readFile(dir / "out/c_labels.bin") ==
        std::string("\7\0\0\0\0\0\0\0", 8));
}

TEST_CASE("Datasets: .npz stored and deflated members, chosen by shape or "
          "by key") {
  TempDir dir;
  runPython(dir, R"(
rng = np.random.default_rng(11)
x = rng.integers(0, 256, (50, 1, 8, 8), dtype=np.uint8)
y = rng.integers(0, 10, 50).astype(np.int64)
np.savez('s.npz', x=x, y=y)
np.savez_compressed('d.npz', images=x, labels=y, extra=y)
x.astype(np.float32).tofile('x'); y.astype('<i4').tofile('y')
)");
  // s.npz: x (4-D) and y (1-D) are told apart by shape; d.npz has two
  // 1-D arrays, so the labels are named.
  for (std::vector<std::string> args :
       {std::vector<std::string>{"convert", dir / "s.npz"},
        std::vector<std::string>{"convert", dir / "d.npz", "--labels-key",
                                 "labels"}}) {
    CAPTURE(args[1]);
    for (const char* a : {"--name", "n", "-q", "-o"})
      args.push_back(a);
    args.push_back(dir / "out");
    ToolRun r = runTool(args);
    REQUIRE_MESSAGE(r.code == 0, r.err);
    CHECK(readFile(dir / "out/n_input.bin") == readFile(dir / "x"));
    CHECK(readFile(dir / "out/n_labels.bin") == readFile(dir / "y"));
  }
  ToolRun amb = runTool({"convert", dir / "d.npz", "-q", "-o", dir / "o2"});
  CHECK(amb.code == 1);
  CHECK(amb.err == "torch2hpvm-dataset: error: " + (dir / "d.npz") +
                       ": cannot tell which arrays are the images and the "
                       "labels among images (50, 1, 8, 8) uint8, labels (50) "
                       "int64, extra (50) int64; use --images-key and "
                       "--labels-key\n");
  CHECK(listDir(dir / "o2").empty());
}

TEST_CASE("Datasets: an HPVM bin pair is re-split and re-normalised") {
  TempDir dir;
  runPython(dir, R"(
rng = np.random.default_rng(1)
x = rng.standard_normal((5, 2, 3, 3)).astype(np.float32)
x.tofile('old_input.bin')
np.array([1, 0, 1, 2, 2], '<i4').tofile('old_labels.bin')
((x - np.array([1, -1], np.float32)[None, :, None, None]) /
 np.array([2, 4], np.float32)[None, :, None, None]).tofile('x')
)");
  ToolRun r = runTool({"convert", dir / "old_input.bin", "--shape", "2,3,3",
                       "--normalize", "1,-1,2,4", "--split", "tune=3,test=2",
                       "-q", "-o", dir / "new"});
  REQUIRE_MESSAGE(r.code == 0, r.err);
  CHECK(readFile(dir / "new/tune_input.bin") +
            readFile(dir / "new/test_input.bin") ==
        readFile(dir / "x"));
  CHECK(readFile(dir / "new/test_labels.bin") ==
        std::string("\2\0\0\0\2\0\0\0", 8));
}

TEST_CASE("Datasets: format detection and the HPVM labels naming") {
  TempDir dir;
  writeFile(dir / "i", idx(0x08, {2, 2, 2}, std::string(8, '\1')));
  writeFile(dir / "q.npy", "\x93NUMPY\1\0");
  writeFile(dir / "z.npz", "PK\3\4rest");
  writeFile(dir / "data_batch_1.bin", std::string(3073 * 2, '\0'));
  writeFile(dir / "train.bin", std::string(3074, '\0'));
  writeFile(dir / "tune_input.bin", std::string(16, '\0'));
  writeFile(dir / "notes.txt", "hello");
  CHECK(detectFormat(dir / "i") == "idx");
  CHECK(detectFormat(dir / "q.npy") == "npy");
  CHECK(detectFormat(dir / "z.npz") == "npz");
  CHECK(detectFormat(dir / "data_batch_1.bin") == "cifar10");
  CHECK(detectFormat(dir / "train.bin") == "cifar100");
  CHECK(detectFormat(dir / "tune_input.bin") == "bin");
  CHECK(detectFormat(dir / "notes.txt") == "");
  CHECK(labelsPathFor("a/tune_input.bin") == "a/tune_labels.bin");
  CHECK(labelsPathFor("input.bin") == "labels.bin");
  CHECK(labelsPathFor("a/x.bin") == "");
}

TEST_CASE("Datasets: 4-D NHWC IDX, big-endian .npy and flat rows with "
          "--shape") {
  TempDir dir;
  runPython(dir, R"(
rng = np.random.default_rng(21)
a = rng.integers(0, 256, (3, 2, 4, 3), dtype=np.uint8)
open('a.idx', 'wb').write(struct.pack('>IIIII', 0x804, 3, 2, 4, 3) +
                          a.tobytes())
open('la.idx', 'wb').write(struct.pack('>II', 0x801, 3) + bytes([2, 0, 1]))
a.transpose(0, 3, 1, 2).astype(np.float32).tofile('ax')
b = rng.standard_normal((4, 3, 2, 2)).astype('>f4')
np.save('b.npy', b); np.save('lb.npy', np.array([1, 2, 3, 4], '>i2'))
b.astype('<f4').tofile('bx')
np.save('c.npy', b.reshape(4, 12).astype('<f8'))
)");
  ToolRun a = runTool({"convert", dir / "a.idx", dir / "la.idx", "--layout",
                       "nhwc", "--name", "a", "-q", "-o", dir / "out"});
  REQUIRE_MESSAGE(a.code == 0, a.err);
  CHECK(readFile(dir / "out/a_input.bin") == readFile(dir / "ax"));
  CHECK(readFile(dir / "out/a_labels.bin") ==
        std::string("\2\0\0\0\0\0\0\0\1\0\0\0", 12));
  ToolRun b = runTool({"convert", dir / "b.npy", dir / "lb.npy", "--name", "b",
                       "-q", "-o", dir / "out"});
  REQUIRE_MESSAGE(b.code == 0, b.err);
  CHECK(readFile(dir / "out/b_input.bin") == readFile(dir / "bx"));
  CHECK(readFile(dir / "out/b_labels.bin") ==
        std::string("\1\0\0\0\2\0\0\0\3\0\0\0\4\0\0\0", 16));
  ToolRun c = runTool({"convert", dir / "c.npy", dir / "lb.npy", "--shape",
                       "3,2,2", "--name", "c", "-q", "-o", dir / "out"});
  REQUIRE_MESSAGE(c.code == 0, c.err);
  CHECK(readFile(dir / "out/c_input.bin") == readFile(dir / "bx"));
  ToolRun flat = runTool({"convert", dir / "c.npy", dir / "lb.npy", "--name",
                          "c", "-q", "-o", dir / "o2"});
  CHECK(flat.code == 1);
  CHECK(flat.err == "torch2hpvm-dataset: error: " + dir / "c.npy" +
                        ": images must be a 3-D (N,H,W) or 4-D (N,C,H,W) "
                        "array, found shape (4, 12); give --shape C,H,W to "
                        "unflatten its rows\n");
}
