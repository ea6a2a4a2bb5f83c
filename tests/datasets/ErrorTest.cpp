// ErrorTest.cpp - bad input of every kind: the exact message (naming the
// file and the numbers), exit code 1, and nothing written.
#include "DatasetTestUtil.h"

#include <zlib.h>

using namespace hpvm::ds::test;

namespace {

const std::string kPrefix = "torch2hpvm-dataset: error: ";

/// Runs convert on \p sources (plus \p extra options) into DIR/out and
/// returns the error message; checks exit code 1 and that nothing was
/// written.
std::string convertError(const TempDir& dir,
                         const std::vector<std::string>& sources,
                         const std::vector<std::string>& extra = {}) {
  std::vector<std::string> args{"convert"};
  args.insert(args.end(), sources.begin(), sources.end());
  args.insert(args.end(), extra.begin(), extra.end());
  args.push_back("-o");
  args.push_back(dir / "out");
  ToolRun r = runTool(args);
  CHECK(r.code == 1);
  CHECK(r.out.empty());
  CHECK_MESSAGE(!fs::exists(dir / "out"), "output directory was created");
  REQUIRE(r.err.rfind(kPrefix, 0) == 0);
  return r.err.substr(kPrefix.size());
}

/// gzip-compresses \p bytes into \p path with zlib.
void writeGz(const std::string& path, const std::string& bytes) {
  gzFile f = gzopen(path.c_str(), "wb");
  REQUIRE(f != nullptr);
  REQUIRE(gzwrite(f, bytes.data(), static_cast<unsigned>(bytes.size())) ==
          static_cast<int>(bytes.size()));
  REQUIRE(gzclose(f) == Z_OK);
}

std::string pixels(size_t n) {
  std::string s(n, '\0');
  for (size_t i = 0; i < n; ++i)
    s[i] = static_cast<char>(i * 7);
  return s;
}

} // namespace

TEST_CASE("Datasets: IDX wrong magic, unknown format, truncated and "
          "trailing data") {
  TempDir dir;
  std::string img = dir / "img", lab = dir / "lab";
  writeFile(lab, idx(0x08, {10}, std::string(10, '\1')));

  writeFile(img, be32(0x00000703) + pixels(20));
  CHECK(convertError(dir, {img, lab}) ==
        img + ": unknown dataset format (not IDX, NumPy .npy/.npz, "
              "CIFAR-10/100 batches or an HPVM *_input.bin/*_labels.bin); "
              "name it with --format\n");
  CHECK(convertError(dir, {img, lab}, {"--format", "idx"}) ==
        img + ": wrong magic number 0x00000703 for an IDX file (expected "
              "0x000008NN for unsigned bytes, NN = 01..04 dimensions)\n");

  writeFile(img, idx(0x08, {10, 4, 4}, pixels(134)));
  CHECK(convertError(dir, {img, lab}) ==
        img + ": truncated: the header announces 10 images of 4x4 uint8 "
              "(176 bytes), but the data has 150 bytes\n");
  writeFile(img, idx(0x08, {10, 4, 4}, pixels(164)));
  CHECK(convertError(dir, {img, lab}) ==
        img + ": 4 unexpected bytes after the 10 images of 4x4 uint8 the "
              "header announces\n");
  writeFile(img, idx(0x08, {10, 4, 4}, pixels(160)));
  writeFile(lab, idx(0x08, {9}, std::string(9, '\1')));
  CHECK(convertError(dir, {img, lab}) ==
        img + " holds 10 images but " + lab + " holds 9 labels\n");
  writeFile(lab, idx(0x08, {10}, std::string(10, '\1')));
  CHECK(convertError(dir, {img}) ==
        img + ": no labels given; add the labels file as another SOURCE\n");
  CHECK(convertError(dir, {img, lab, dir / "img2"}) ==
        dir / "img2" + ": cannot open: No such file or directory\n");
}

TEST_CASE("Datasets: gzip truncated inside the data, at the trailer, and "
          "corrupt") {
  TempDir dir;
  std::string img = dir / "img.gz", lab = dir / "lab";
  writeFile(lab, idx(0x08, {10}, std::string(10, '\1')));
  writeGz(img, idx(0x08, {10, 4, 4}, pixels(134)));
  CHECK(convertError(dir, {img, lab}) ==
        img + ": truncated: the data of images 0..9 needs bytes 16 to 176, "
              "but the data ends at byte 150\n");

  writeGz(img, idx(0x08, {10, 4, 4}, pixels(160)));
  std::string gz = readFile(img);
  writeFile(img, gz.substr(0, gz.size() - 8));
  CHECK(convertError(dir, {img, lab}) ==
        img + ": truncated gzip data: the compressed stream ends after 176 "
              "decompressed bytes\n");
  gz[2] = 7; // compression method
  writeFile(img, gz);
  CHECK(convertError(dir, {img, lab}) ==
        img + ": corrupt gzip data: unknown compression method\n");
}

TEST_CASE("Datasets: labels out of range are named with file, sample and "
          "value") {
  TempDir dir;
  std::string img = dir / "img", lab = dir / "lab";
  writeFile(img, idx(0x08, {6, 2, 2}, pixels(24)));
  writeFile(lab, idx(0x08, {6}, std::string("\1\2\3\14\0\0", 6)));
  CHECK(convertError(dir, {img, lab}, {"--classes", "10"}) ==
        lab + ": sample 3 has label 12; labels must lie in 0..9\n");

  std::string rec(3073, '\5');
  std::string batch = rec + rec;
  batch[3073] = 10;
  writeFile(dir / "data_batch_1.bin", batch);
  CHECK(convertError(dir, {dir / "data_batch_1.bin"}) ==
        dir / "data_batch_1.bin" +
            ": record 1 has a label 10; labels must lie in 0..9\n");
  writeFile(dir / "data_batch_2.bin", std::string(3000, '\0'));
  CHECK(
      convertError(dir, {dir / "data_batch_2.bin"}, {"--format", "cifar10"}) ==
      dir / "data_batch_2.bin" +
          ": 3000 bytes is not a whole number of CIFAR-10 records (3073 "
          "bytes: 1 label byte + 3x32x32 pixels)\n");
  CHECK(convertError(dir, {dir / "data_batch_1.bin", dir / "data_batch_2.bin"},
                     {"--format", "cifar100"}) ==
        dir / "data_batch_1.bin" +
            ": 6146 bytes is not a whole number of CIFAR-100 records (3074 "
            "bytes: coarse and fine label bytes + 3x32x32 pixels)\n");
}

TEST_CASE("Datasets: counts that do not fit the split, limit or halves") {
  TempDir dir;
  std::string img = dir / "img", lab = dir / "lab";
  writeFile(img, idx(0x08, {9, 2, 2}, pixels(36)));
  writeFile(lab, idx(0x08, {9}, std::string(9, '\1')));
  CHECK(convertError(dir, {img, lab}) ==
        "cannot split 9 images into equal tune and test halves; use --split "
        "or --name\n");
  CHECK(convertError(dir, {img, lab}, {"--split", "tune=5,test=5"}) ==
        "--split asks for 10 images, but " + img + " has 9\n");
  CHECK(convertError(dir, {img, lab}, {"--limit", "4", "--split", "a=3,b=2"}) ==
        "--split asks for 5 images, but " + img + " has 4 after --limit\n");
  CHECK(convertError(dir, {img, lab}, {"--limit", "10", "--name", "x"}) ==
        "--limit 10 is not within 1..9, the images of " + img + "\n");
  CHECK(convertError(dir, {img, lab}, {"--name", "x", "--split", "a=1"}) ==
        "--name and --split exclude each other\n");
  CHECK(convertError(dir, {img, lab}, {"--split", "tune"}) ==
        "--split: 'tune' is not NAME=COUNT (NAME of 1 to 100 letters, digits "
        "and _, COUNT positive), as in tune=5000,test=5000\n");
  CHECK(convertError(dir, {img, lab},
                     {"--split", std::string(101, 'n') + "=3"}) ==
        "--split: '" + std::string(101, 'n') +
            "=3' is not NAME=COUNT (NAME of 1 to 100 letters, digits and _, "
            "COUNT positive), as in tune=5000,test=5000\n");
  CHECK(convertError(dir, {img, lab}, {"--name", "a/b"}) ==
        "--name: 'a/b' is not a NAME (1 to 100 letters, digits and _), as in "
        "--name test\n");
  CHECK(convertError(dir, {img, lab}, {"--name", ".."}) ==
        "--name: '..' is not a NAME (1 to 100 letters, digits and _), as in "
        "--name test\n");
  CHECK(convertError(dir, {img, lab}, {"--split", "a=1,a=2"}) ==
        "--split: part 'a' is given twice\n");
  CHECK(convertError(dir, {img, lab}, {"--scale", "1/0"}) ==
        "--scale: '1/0' is not a positive number or fraction (for example "
        "1/255)\n");
  CHECK(convertError(dir, {img, lab}, {"--normalize", "0.1,0.2,0.3,0.4"}) ==
        "--normalize: expected MEAN,STD or 1 means then 1 deviations for "
        "1-channel images, got 4 values\n");
  CHECK(convertError(dir, {img, lab}, {"--normalize", "0.5,0"}) ==
        "--normalize: standard deviation 0 of channel 0 must be positive\n");
}

TEST_CASE("Datasets: HPVM bin pairs are checked against --shape and each "
          "other") {
  TempDir dir;
  std::string in = dir / "test_input.bin", lab = dir / "test_labels.bin";
  writeFile(in, std::string(5 * 784 * 4, '\0'));
  writeFile(lab, std::string(5 * 4, '\0'));
  std::string hint = "; with the 5 labels of " + lab +
                     " it holds 784 floats per image (for example 1x28x28)\n";
  CHECK(convertError(dir, {in}, {"--shape", "3,32,32"}) ==
        in +
            ": 15680 bytes is not a whole number of 3x32x32 float32 images "
            "(12288 bytes each)" +
            hint);
  CHECK(convertError(dir, {in}, {"--shape", "1,14,28"}) ==
        in + " holds 10 images of 1x14x28 but " + lab + " holds 5 labels" +
            hint);
  CHECK(convertError(dir, {in}) ==
        in +
            ": an HPVM bin file has no header: give the image shape with "
            "--shape C,H,W" +
            hint);
  CHECK(convertError(dir, {in}, {"--shape", "1,28"}) ==
        "--shape: '1,28' is not a shape C,H,W of three positive integers\n");
  writeFile(lab, std::string(7, '\0'));
  CHECK(convertError(dir, {in, lab}, {"--shape", "1,28,28"}) ==
        lab + ": 7 bytes is not a whole number of int32 labels (4 bytes "
              "each)\n");
  fs::remove(lab);
  CHECK(convertError(dir, {in}, {"--shape", "1,28,28"}) ==
        in + ": labels file " + lab +
            " not found; give the labels file as a second SOURCE\n");
}

TEST_CASE("Datasets: NumPy files with unsupported types, order, NaN, CRC") {
  TempDir dir;
  runPython(dir, R"(
import zipfile
np.save('c.npy', np.zeros((2, 2, 2), np.complex64))
np.save('f.npy', np.asfortranarray(np.zeros((2, 3, 2), np.float32)))
np.save('fl.npy', np.zeros(2, np.float32))
np.save('l.npy', np.zeros(2, np.int64))
x = np.zeros((2, 2, 2), np.float32); x[1, 0, 2 - 1] = np.nan
np.save('nan.npy', x)
np.savez('z.npz', x=np.arange(8, dtype=np.uint8).reshape(2, 2, 2),
         y=np.array([1, 2]))
b = bytearray(open('z.npz', 'rb').read())
with zipfile.ZipFile('z.npz') as z:
    data = z.read('x.npy')
off = b.find(data)
b[off + len(data) - 1] ^= 0xFF
open('bad.npz', 'wb').write(bytes(b))
)");
  CHECK(convertError(dir, {dir / "c.npy", dir / "l.npy"}) ==
        dir / "c.npy" + ": unsupported element type '<c8' (expected uint8, "
                        "float32, float64 or, for labels, an integer type)\n");
  CHECK(convertError(dir, {dir / "f.npy", dir / "l.npy"}) ==
        dir / "f.npy" + ": the array is stored in Fortran order; save it in "
                        "C order (numpy.ascontiguousarray)\n");
  CHECK(convertError(dir, {dir / "nan.npy", dir / "fl.npy"}) ==
        dir / "fl.npy" + ": labels are float32; integer labels expected\n");
  CHECK(convertError(dir, {dir / "nan.npy", dir / "l.npy"}, {"--name", "n"}) ==
        dir / "nan.npy" +
            ": image 1 holds a NaN or infinite value at element 1\n");
  // (libzip checks the CRC-32 and says so in its words.)
  CHECK(convertError(dir, {dir / "bad.npz"}, {"--name", "n"}) ==
        dir / "bad.npz" + ":x.npy: corrupt archive: CRC error\n");
}

TEST_CASE("Datasets: a failure mid-stream leaves the output directory as it "
          "was") {
  TempDir dir;
  std::string img = dir / "img", lab = dir / "lab";
  writeFile(img, idx(0x08, {4000, 2, 2}, pixels(16000)));
  std::string labels(4000, '\1');
  labels[3500] = 42;
  writeFile(lab, idx(0x08, {4000}, labels));
  fs::create_directories(dir / "out");
  writeFile(dir / "out/tune_input.bin", "old");
  ToolRun r =
      runTool({"convert", img, lab, "--classes", "10", "-o", dir / "out"});
  CHECK(r.code == 1);
  CHECK(r.err == kPrefix + lab +
                     ": sample 3500 has label 42; labels must lie in 0..9\n");
  CHECK(listDir(dir / "out") == std::vector<std::string>{"tune_input.bin"});
  CHECK(readFile(dir / "out/tune_input.bin") == "old");
}

TEST_CASE("Datasets: sources that do not form one dataset") {
  TempDir dir;
  runPython(dir, R"(
np.savez('z.npz', x=np.zeros((2, 2, 2), np.uint8), y=np.array([0, 1]))
np.save('y.npy', np.array([0, 1]))
np.save('x.npy', np.zeros((2, 2, 2), np.uint8))
open('cut.npz', 'wb').write(open('z.npz', 'rb').read()[:100])
)");
  writeFile(dir / "i", idx(0x08, {2, 2, 2}, pixels(8)));
  writeGz(dir / "data_batch_1.bin.gz", std::string(3073, '\0'));
  CHECK(convertError(dir, {dir / "i", dir / "y.npy"}) ==
        "the sources mix formats: " + dir / "i" + " (idx), " + dir / "y.npy" +
            " (npy)\n");
  CHECK(convertError(dir, {dir / "x.npy", dir / "x.npy"}) ==
        dir / "x.npy" + " and " + dir / "x.npy" +
            " both look like images (shape (2, 2, 2)); give one images and "
            "one labels file\n");
  CHECK(convertError(dir, {dir / "y.npy"}) ==
        dir / "y.npy" +
            ": only labels given; add the images file as another SOURCE\n");
  CHECK(convertError(dir, {dir / "z.npz"}, {"--images-key", "q"}) ==
        dir / "z.npz" + ": no array 'q' for the images (arrays: x, y)\n");
  CHECK(convertError(dir, {dir / "z.npz", dir / "z.npz"}) ==
        "give exactly one .npz archive, not 2 files\n");
  CHECK(convertError(dir, {dir / "cut.npz"}) ==
        dir / "cut.npz" + ": not a valid .npz (zip) archive: Not a zip "
                          "archive\n");
  CHECK(convertError(dir, {dir / "data_batch_1.bin.gz"},
                     {"--format", "cifar10"}) ==
        dir / "data_batch_1.bin.gz" +
            ": gzip-compressed CIFAR batches are not supported; extract the "
            ".bin files first\n");
  CHECK(convertError(dir, {dir / "a_input.bin", dir / "b", dir / "c"},
                     {"--format", "bin"}) ==
        "give an HPVM inputs file and its labels file, not 3 files\n");
}
