// resnet.cpp - a hand-written HPVM-C small ResNet (CIFAR-shaped, 3x32x32) in
// the style of HPVM's DNN benchmarks (one tensor op per leaf node, a root node
// wiring them with bindIn/edge/bindOut, a packed launch struct, weights read
// with readTrainedWeights, one launch per batch). It is compiled with stock
// clang++ against hpvm_rt, with -DMODEL_PARAMS_DIR=<dir>; make_data.py
// writes <dir>/resnet/ (weights, test_input.bin, test_labels.bin).
//
// Usage: resnet [-c CONF_FILE] [-o OUTPUT] [-b BATCH] [-n IMAGES]
//   -o writes the concatenated outputs (IMAGES x 10 float32).
//
// Like HPVM's ResNets it tags every leaf with __hpvm__node_id (1-based op
// positions), so configuration lines are found by node id; it has identity
// and 1x1-convolution shortcuts and a block with batch norm.

#include <string>

#include <config.h>
#include <hpvm.h>
#include <tensorUtils.h>

#ifndef MODEL_PARAMS_DIR
#error MODEL_PARAMS_DIR is not defined
#endif

#define STR_VALUE(X) #X
#define STRINGIFY(X) STR_VALUE(X)

void var_0_node(void* t1, size_t bytes_t1, void* t2, size_t bytes_t2) {
  __hpvm__hint(hpvm::TENSOR_TARGET);
  __hpvm__attributes(2, t1, t2, 0);
  __hpvm__node_id(1);

  void* r = __hpvm__tensor_convolution(t1, t2, 1, 1, 1, 1);
  __hpvm__return(2, r, (size_t)0);
}

void var_1_node(void* t1, size_t bytes_t1, void* t2, size_t bytes_t2) {
  __hpvm__hint(hpvm::TENSOR_TARGET);
  __hpvm__attributes(2, t1, t2, 0);
  __hpvm__node_id(2);

  void* r = __hpvm__tensor_add(t1, t2);
  __hpvm__return(2, r, (size_t)0);
}

void var_2_node(void* t1, size_t bytes_t1) {
  __hpvm__hint(hpvm::TENSOR_TARGET);
  __hpvm__attributes(1, t1, 0);
  __hpvm__node_id(3);

  void* r = __hpvm__tensor_relu(t1);
  __hpvm__return(2, r, (size_t)0);
}

void var_3_node(void* t1, size_t bytes_t1, void* t2, size_t bytes_t2) {
  __hpvm__hint(hpvm::TENSOR_TARGET);
  __hpvm__attributes(2, t1, t2, 0);
  __hpvm__node_id(4);

  void* r = __hpvm__tensor_convolution(t1, t2, 1, 1, 1, 1);
  __hpvm__return(2, r, (size_t)0);
}

void var_4_node(void* t1, size_t bytes_t1, void* t2, size_t bytes_t2) {
  __hpvm__hint(hpvm::TENSOR_TARGET);
  __hpvm__attributes(2, t1, t2, 0);
  __hpvm__node_id(5);

  void* r = __hpvm__tensor_add(t1, t2);
  __hpvm__return(2, r, (size_t)0);
}

void var_5_node(void* t1, size_t bytes_t1) {
  __hpvm__hint(hpvm::TENSOR_TARGET);
  __hpvm__attributes(1, t1, 0);
  __hpvm__node_id(6);

  void* r = __hpvm__tensor_relu(t1);
  __hpvm__return(2, r, (size_t)0);
}

void var_6_node(void* t1, size_t bytes_t1, void* t2, size_t bytes_t2) {
  __hpvm__hint(hpvm::TENSOR_TARGET);
  __hpvm__attributes(2, t1, t2, 0);
  __hpvm__node_id(7);

  void* r = __hpvm__tensor_convolution(t1, t2, 1, 1, 1, 1);
  __hpvm__return(2, r, (size_t)0);
}

void var_7_node(void* t1, size_t bytes_t1, void* t2, size_t bytes_t2) {
  __hpvm__hint(hpvm::TENSOR_TARGET);
  __hpvm__attributes(2, t1, t2, 0);
  __hpvm__node_id(8);

  void* r = __hpvm__tensor_add(t1, t2);
  __hpvm__return(2, r, (size_t)0);
}

void var_8_node(void* t1, size_t bytes_t1, void* t2, size_t bytes_t2) {
  __hpvm__hint(hpvm::TENSOR_TARGET);
  __hpvm__attributes(2, t1, t2, 0);
  __hpvm__node_id(9);

  void* r = __hpvm__tensor_add(t1, t2);
  __hpvm__return(2, r, (size_t)0);
}

void var_9_node(void* t1, size_t bytes_t1) {
  __hpvm__hint(hpvm::TENSOR_TARGET);
  __hpvm__attributes(1, t1, 0);
  __hpvm__node_id(10);

  void* r = __hpvm__tensor_relu(t1);
  __hpvm__return(2, r, (size_t)0);
}

void var_10_node(void* t1, size_t bytes_t1, void* t2, size_t bytes_t2) {
  __hpvm__hint(hpvm::TENSOR_TARGET);
  __hpvm__attributes(2, t1, t2, 0);
  __hpvm__node_id(11);

  void* r = __hpvm__tensor_convolution(t1, t2, 1, 1, 2, 2);
  __hpvm__return(2, r, (size_t)0);
}

void var_11_node(void* t1, size_t bytes_t1, void* t2, size_t bytes_t2) {
  __hpvm__hint(hpvm::TENSOR_TARGET);
  __hpvm__attributes(2, t1, t2, 0);
  __hpvm__node_id(12);

  void* r = __hpvm__tensor_add(t1, t2);
  __hpvm__return(2, r, (size_t)0);
}

void var_12_node(void* t1, size_t bytes_t1) {
  __hpvm__hint(hpvm::TENSOR_TARGET);
  __hpvm__attributes(1, t1, 0);
  __hpvm__node_id(13);

  void* r = __hpvm__tensor_relu(t1);
  __hpvm__return(2, r, (size_t)0);
}

void var_13_node(void* t1, size_t bytes_t1, void* t2, size_t bytes_t2) {
  __hpvm__hint(hpvm::TENSOR_TARGET);
  __hpvm__attributes(2, t1, t2, 0);
  __hpvm__node_id(14);

  void* r = __hpvm__tensor_convolution(t1, t2, 1, 1, 1, 1);
  __hpvm__return(2, r, (size_t)0);
}

void var_14_node(void* t1, size_t bytes_t1, void* t2, size_t bytes_t2) {
  __hpvm__hint(hpvm::TENSOR_TARGET);
  __hpvm__attributes(2, t1, t2, 0);
  __hpvm__node_id(15);

  void* r = __hpvm__tensor_add(t1, t2);
  __hpvm__return(2, r, (size_t)0);
}

void var_15_node(void* t1, size_t bytes_t1, void* t2, size_t bytes_t2) {
  __hpvm__hint(hpvm::TENSOR_TARGET);
  __hpvm__attributes(2, t1, t2, 0);
  __hpvm__node_id(16);

  void* r = __hpvm__tensor_convolution(t1, t2, 0, 0, 2, 2);
  __hpvm__return(2, r, (size_t)0);
}

void var_16_node(void* t1, size_t bytes_t1, void* t2, size_t bytes_t2) {
  __hpvm__hint(hpvm::TENSOR_TARGET);
  __hpvm__attributes(2, t1, t2, 0);
  __hpvm__node_id(17);

  void* r = __hpvm__tensor_add(t1, t2);
  __hpvm__return(2, r, (size_t)0);
}

void var_17_node(void* t1, size_t bytes_t1, void* t2, size_t bytes_t2) {
  __hpvm__hint(hpvm::TENSOR_TARGET);
  __hpvm__attributes(2, t1, t2, 0);
  __hpvm__node_id(18);

  void* r = __hpvm__tensor_add(t1, t2);
  __hpvm__return(2, r, (size_t)0);
}

void var_18_node(void* t1, size_t bytes_t1) {
  __hpvm__hint(hpvm::TENSOR_TARGET);
  __hpvm__attributes(1, t1, 0);
  __hpvm__node_id(19);

  void* r = __hpvm__tensor_relu(t1);
  __hpvm__return(2, r, (size_t)0);
}

void var_19_node(void* t1, size_t bytes_t1, void* t2, size_t bytes_t2) {
  __hpvm__hint(hpvm::TENSOR_TARGET);
  __hpvm__attributes(2, t1, t2, 0);
  __hpvm__node_id(20);

  void* r = __hpvm__tensor_convolution(t1, t2, 1, 1, 1, 1);
  __hpvm__return(2, r, (size_t)0);
}

void var_20_node(void* t1, size_t bytes_t1, void* t2, size_t bytes_t2, void* t3,
                 size_t bytes_t3, void* t4, size_t bytes_t4, void* t5,
                 size_t bytes_t5) {
  __hpvm__hint(hpvm::TENSOR_TARGET);
  __hpvm__attributes(5, t1, t2, t3, t4, t5, 0);
  __hpvm__node_id(21);

  void* r = __hpvm__tensor_batchnorm(t1, t2, t3, t4, t5, 0.00001);
  __hpvm__return(2, r, (size_t)0);
}

void var_21_node(void* t1, size_t bytes_t1) {
  __hpvm__hint(hpvm::TENSOR_TARGET);
  __hpvm__attributes(1, t1, 0);
  __hpvm__node_id(22);

  void* r = __hpvm__tensor_relu(t1);
  __hpvm__return(2, r, (size_t)0);
}

void var_22_node(void* t1, size_t bytes_t1, void* t2, size_t bytes_t2) {
  __hpvm__hint(hpvm::TENSOR_TARGET);
  __hpvm__attributes(2, t1, t2, 0);
  __hpvm__node_id(23);

  void* r = __hpvm__tensor_convolution(t1, t2, 1, 1, 1, 1);
  __hpvm__return(2, r, (size_t)0);
}

void var_23_node(void* t1, size_t bytes_t1, void* t2, size_t bytes_t2, void* t3,
                 size_t bytes_t3, void* t4, size_t bytes_t4, void* t5,
                 size_t bytes_t5) {
  __hpvm__hint(hpvm::TENSOR_TARGET);
  __hpvm__attributes(5, t1, t2, t3, t4, t5, 0);
  __hpvm__node_id(24);

  void* r = __hpvm__tensor_batchnorm(t1, t2, t3, t4, t5, 0.00001);
  __hpvm__return(2, r, (size_t)0);
}

void var_24_node(void* t1, size_t bytes_t1, void* t2, size_t bytes_t2) {
  __hpvm__hint(hpvm::TENSOR_TARGET);
  __hpvm__attributes(2, t1, t2, 0);
  __hpvm__node_id(25);

  void* r = __hpvm__tensor_add(t1, t2);
  __hpvm__return(2, r, (size_t)0);
}

void var_25_node(void* t1, size_t bytes_t1) {
  __hpvm__hint(hpvm::TENSOR_TARGET);
  __hpvm__attributes(1, t1, 0);
  __hpvm__node_id(26);

  void* r = __hpvm__tensor_relu(t1);
  __hpvm__return(2, r, (size_t)0);
}

void var_26_node(void* t1, size_t bytes_t1) {
  __hpvm__hint(hpvm::TENSOR_TARGET);
  __hpvm__attributes(1, t1, 0);
  __hpvm__node_id(27);

  void* r = __hpvm__tensor_pool_mean(t1, 16, 16, 0, 0, 16, 16);
  __hpvm__return(2, r, (size_t)0);
}

void var_27_node(void* t1, size_t bytes_t1, void* t2, size_t bytes_t2) {
  __hpvm__hint(hpvm::TENSOR_TARGET);
  __hpvm__attributes(2, t1, t2, 0);
  __hpvm__node_id(28);

  void* r = __hpvm__tensor_mul(t1, t2);
  __hpvm__return(2, r, (size_t)0);
}

void var_28_node(void* t1, size_t bytes_t1, void* t2, size_t bytes_t2) {
  __hpvm__hint(hpvm::TENSOR_TARGET);
  __hpvm__attributes(2, t1, t2, 0);
  __hpvm__node_id(29);

  void* r = __hpvm__tensor_add(t1, t2);
  __hpvm__return(2, r, (size_t)0);
}

void var_29_node(void* t1, size_t bytes_t1) {
  __hpvm__hint(hpvm::TENSOR_TARGET);
  __hpvm__attributes(1, t1, 0);
  __hpvm__node_id(30);

  void* r = __hpvm__tensor_softmax(t1);
  __hpvm__return(2, r, (size_t)0);
}

void root(
    void* input, size_t input_bytes, void* conv2d_1_w, size_t conv2d_1_w_bytes,
    void* conv2d_1_b, size_t conv2d_1_b_bytes, void* conv2d_2_w,
    size_t conv2d_2_w_bytes, void* conv2d_2_b, size_t conv2d_2_b_bytes,
    void* conv2d_3_w, size_t conv2d_3_w_bytes, void* conv2d_3_b,
    size_t conv2d_3_b_bytes, void* conv2d_4_w, size_t conv2d_4_w_bytes,
    void* conv2d_4_b, size_t conv2d_4_b_bytes, void* conv2d_5_w,
    size_t conv2d_5_w_bytes, void* conv2d_5_b, size_t conv2d_5_b_bytes,
    void* conv2d_6_w, size_t conv2d_6_w_bytes, void* conv2d_6_b,
    size_t conv2d_6_b_bytes, void* conv2d_7_w, size_t conv2d_7_w_bytes,
    void* batch_normalization_1_gamma, size_t batch_normalization_1_gamma_bytes,
    void* batch_normalization_1_beta, size_t batch_normalization_1_beta_bytes,
    void* batch_normalization_1_mean, size_t batch_normalization_1_mean_bytes,
    void* batch_normalization_1_variance,
    size_t batch_normalization_1_variance_bytes, void* conv2d_8_w,
    size_t conv2d_8_w_bytes, void* batch_normalization_2_gamma,
    size_t batch_normalization_2_gamma_bytes, void* batch_normalization_2_beta,
    size_t batch_normalization_2_beta_bytes, void* batch_normalization_2_mean,
    size_t batch_normalization_2_mean_bytes,
    void* batch_normalization_2_variance,
    size_t batch_normalization_2_variance_bytes, void* dense_1_w,
    size_t dense_1_w_bytes, void* dense_1_b, size_t dense_1_b_bytes) {

  __hpvm__hint(hpvm::CPU_TARGET);
  __hpvm__attributes(25, input, conv2d_1_w, conv2d_1_b, conv2d_2_w, conv2d_2_b,
                     conv2d_3_w, conv2d_3_b, conv2d_4_w, conv2d_4_b, conv2d_5_w,
                     conv2d_5_b, conv2d_6_w, conv2d_6_b, conv2d_7_w,
                     batch_normalization_1_gamma, batch_normalization_1_beta,
                     batch_normalization_1_mean, batch_normalization_1_variance,
                     conv2d_8_w, batch_normalization_2_gamma,
                     batch_normalization_2_beta, batch_normalization_2_mean,
                     batch_normalization_2_variance, dense_1_w, dense_1_b, 0);

  void* var_0 = __hpvm__createNodeND(0, var_0_node);

  __hpvm__bindIn(var_0, 0, 0, 0);
  __hpvm__bindIn(var_0, 1, 1, 0);
  __hpvm__bindIn(var_0, 2, 2, 0);
  __hpvm__bindIn(var_0, 3, 3, 0);

  void* var_1 = __hpvm__createNodeND(0, var_1_node);

  __hpvm__edge(var_0, var_1, 1, 0, 0, 0);
  __hpvm__edge(var_0, var_1, 1, 1, 1, 0);
  __hpvm__bindIn(var_1, 4, 2, 0);
  __hpvm__bindIn(var_1, 5, 3, 0);

  void* var_2 = __hpvm__createNodeND(0, var_2_node);

  __hpvm__edge(var_1, var_2, 1, 0, 0, 0);
  __hpvm__edge(var_1, var_2, 1, 1, 1, 0);

  void* var_3 = __hpvm__createNodeND(0, var_3_node);

  __hpvm__edge(var_2, var_3, 1, 0, 0, 0);
  __hpvm__edge(var_2, var_3, 1, 1, 1, 0);
  __hpvm__bindIn(var_3, 6, 2, 0);
  __hpvm__bindIn(var_3, 7, 3, 0);

  void* var_4 = __hpvm__createNodeND(0, var_4_node);

  __hpvm__edge(var_3, var_4, 1, 0, 0, 0);
  __hpvm__edge(var_3, var_4, 1, 1, 1, 0);
  __hpvm__bindIn(var_4, 8, 2, 0);
  __hpvm__bindIn(var_4, 9, 3, 0);

  void* var_5 = __hpvm__createNodeND(0, var_5_node);

  __hpvm__edge(var_4, var_5, 1, 0, 0, 0);
  __hpvm__edge(var_4, var_5, 1, 1, 1, 0);

  void* var_6 = __hpvm__createNodeND(0, var_6_node);

  __hpvm__edge(var_5, var_6, 1, 0, 0, 0);
  __hpvm__edge(var_5, var_6, 1, 1, 1, 0);
  __hpvm__bindIn(var_6, 10, 2, 0);
  __hpvm__bindIn(var_6, 11, 3, 0);

  void* var_7 = __hpvm__createNodeND(0, var_7_node);

  __hpvm__edge(var_6, var_7, 1, 0, 0, 0);
  __hpvm__edge(var_6, var_7, 1, 1, 1, 0);
  __hpvm__bindIn(var_7, 12, 2, 0);
  __hpvm__bindIn(var_7, 13, 3, 0);

  void* var_8 = __hpvm__createNodeND(0, var_8_node);

  __hpvm__edge(var_7, var_8, 1, 0, 0, 0);
  __hpvm__edge(var_7, var_8, 1, 1, 1, 0);
  __hpvm__edge(var_2, var_8, 1, 0, 2, 0);
  __hpvm__edge(var_2, var_8, 1, 1, 3, 0);

  void* var_9 = __hpvm__createNodeND(0, var_9_node);

  __hpvm__edge(var_8, var_9, 1, 0, 0, 0);
  __hpvm__edge(var_8, var_9, 1, 1, 1, 0);

  void* var_10 = __hpvm__createNodeND(0, var_10_node);

  __hpvm__edge(var_9, var_10, 1, 0, 0, 0);
  __hpvm__edge(var_9, var_10, 1, 1, 1, 0);
  __hpvm__bindIn(var_10, 14, 2, 0);
  __hpvm__bindIn(var_10, 15, 3, 0);

  void* var_11 = __hpvm__createNodeND(0, var_11_node);

  __hpvm__edge(var_10, var_11, 1, 0, 0, 0);
  __hpvm__edge(var_10, var_11, 1, 1, 1, 0);
  __hpvm__bindIn(var_11, 16, 2, 0);
  __hpvm__bindIn(var_11, 17, 3, 0);

  void* var_12 = __hpvm__createNodeND(0, var_12_node);

  __hpvm__edge(var_11, var_12, 1, 0, 0, 0);
  __hpvm__edge(var_11, var_12, 1, 1, 1, 0);

  void* var_13 = __hpvm__createNodeND(0, var_13_node);

  __hpvm__edge(var_12, var_13, 1, 0, 0, 0);
  __hpvm__edge(var_12, var_13, 1, 1, 1, 0);
  __hpvm__bindIn(var_13, 18, 2, 0);
  __hpvm__bindIn(var_13, 19, 3, 0);

  void* var_14 = __hpvm__createNodeND(0, var_14_node);

  __hpvm__edge(var_13, var_14, 1, 0, 0, 0);
  __hpvm__edge(var_13, var_14, 1, 1, 1, 0);
  __hpvm__bindIn(var_14, 20, 2, 0);
  __hpvm__bindIn(var_14, 21, 3, 0);

  void* var_15 = __hpvm__createNodeND(0, var_15_node);

  __hpvm__edge(var_9, var_15, 1, 0, 0, 0);
  __hpvm__edge(var_9, var_15, 1, 1, 1, 0);
  __hpvm__bindIn(var_15, 22, 2, 0);
  __hpvm__bindIn(var_15, 23, 3, 0);

  void* var_16 = __hpvm__createNodeND(0, var_16_node);

  __hpvm__edge(var_15, var_16, 1, 0, 0, 0);
  __hpvm__edge(var_15, var_16, 1, 1, 1, 0);
  __hpvm__bindIn(var_16, 24, 2, 0);
  __hpvm__bindIn(var_16, 25, 3, 0);

  void* var_17 = __hpvm__createNodeND(0, var_17_node);

  __hpvm__edge(var_16, var_17, 1, 0, 0, 0);
  __hpvm__edge(var_16, var_17, 1, 1, 1, 0);
  __hpvm__edge(var_14, var_17, 1, 0, 2, 0);
  __hpvm__edge(var_14, var_17, 1, 1, 3, 0);

  void* var_18 = __hpvm__createNodeND(0, var_18_node);

  __hpvm__edge(var_17, var_18, 1, 0, 0, 0);
  __hpvm__edge(var_17, var_18, 1, 1, 1, 0);

  void* var_19 = __hpvm__createNodeND(0, var_19_node);

  __hpvm__edge(var_18, var_19, 1, 0, 0, 0);
  __hpvm__edge(var_18, var_19, 1, 1, 1, 0);
  __hpvm__bindIn(var_19, 26, 2, 0);
  __hpvm__bindIn(var_19, 27, 3, 0);

  void* var_20 = __hpvm__createNodeND(0, var_20_node);

  __hpvm__edge(var_19, var_20, 1, 0, 0, 0);
  __hpvm__edge(var_19, var_20, 1, 1, 1, 0);
  __hpvm__bindIn(var_20, 28, 2, 0);
  __hpvm__bindIn(var_20, 29, 3, 0);
  __hpvm__bindIn(var_20, 30, 4, 0);
  __hpvm__bindIn(var_20, 31, 5, 0);
  __hpvm__bindIn(var_20, 32, 6, 0);
  __hpvm__bindIn(var_20, 33, 7, 0);
  __hpvm__bindIn(var_20, 34, 8, 0);
  __hpvm__bindIn(var_20, 35, 9, 0);

  void* var_21 = __hpvm__createNodeND(0, var_21_node);

  __hpvm__edge(var_20, var_21, 1, 0, 0, 0);
  __hpvm__edge(var_20, var_21, 1, 1, 1, 0);

  void* var_22 = __hpvm__createNodeND(0, var_22_node);

  __hpvm__edge(var_21, var_22, 1, 0, 0, 0);
  __hpvm__edge(var_21, var_22, 1, 1, 1, 0);
  __hpvm__bindIn(var_22, 36, 2, 0);
  __hpvm__bindIn(var_22, 37, 3, 0);

  void* var_23 = __hpvm__createNodeND(0, var_23_node);

  __hpvm__edge(var_22, var_23, 1, 0, 0, 0);
  __hpvm__edge(var_22, var_23, 1, 1, 1, 0);
  __hpvm__bindIn(var_23, 38, 2, 0);
  __hpvm__bindIn(var_23, 39, 3, 0);
  __hpvm__bindIn(var_23, 40, 4, 0);
  __hpvm__bindIn(var_23, 41, 5, 0);
  __hpvm__bindIn(var_23, 42, 6, 0);
  __hpvm__bindIn(var_23, 43, 7, 0);
  __hpvm__bindIn(var_23, 44, 8, 0);
  __hpvm__bindIn(var_23, 45, 9, 0);

  void* var_24 = __hpvm__createNodeND(0, var_24_node);

  __hpvm__edge(var_23, var_24, 1, 0, 0, 0);
  __hpvm__edge(var_23, var_24, 1, 1, 1, 0);
  __hpvm__edge(var_18, var_24, 1, 0, 2, 0);
  __hpvm__edge(var_18, var_24, 1, 1, 3, 0);

  void* var_25 = __hpvm__createNodeND(0, var_25_node);

  __hpvm__edge(var_24, var_25, 1, 0, 0, 0);
  __hpvm__edge(var_24, var_25, 1, 1, 1, 0);

  void* var_26 = __hpvm__createNodeND(0, var_26_node);

  __hpvm__edge(var_25, var_26, 1, 0, 0, 0);
  __hpvm__edge(var_25, var_26, 1, 1, 1, 0);

  void* var_27 = __hpvm__createNodeND(0, var_27_node);

  __hpvm__edge(var_26, var_27, 1, 0, 0, 0);
  __hpvm__edge(var_26, var_27, 1, 1, 1, 0);
  __hpvm__bindIn(var_27, 46, 2, 0);
  __hpvm__bindIn(var_27, 47, 3, 0);

  void* var_28 = __hpvm__createNodeND(0, var_28_node);

  __hpvm__edge(var_27, var_28, 1, 0, 0, 0);
  __hpvm__edge(var_27, var_28, 1, 1, 1, 0);
  __hpvm__bindIn(var_28, 48, 2, 0);
  __hpvm__bindIn(var_28, 49, 3, 0);

  void* var_29 = __hpvm__createNodeND(0, var_29_node);

  __hpvm__edge(var_28, var_29, 1, 0, 0, 0);
  __hpvm__edge(var_28, var_29, 1, 1, 1, 0);

  __hpvm__bindOut(var_29, 0, 0, 0);
  __hpvm__bindOut(var_29, 1, 1, 0);
}

struct ret_t {
  void* tensor;
  size_t bytes;
};

typedef struct __attribute__((__packed__)) {
  void* input;
  size_t input_bytes;
  void* conv2d_1_w;
  size_t conv2d_1_w_bytes;
  void* conv2d_1_b;
  size_t conv2d_1_b_bytes;
  void* conv2d_2_w;
  size_t conv2d_2_w_bytes;
  void* conv2d_2_b;
  size_t conv2d_2_b_bytes;
  void* conv2d_3_w;
  size_t conv2d_3_w_bytes;
  void* conv2d_3_b;
  size_t conv2d_3_b_bytes;
  void* conv2d_4_w;
  size_t conv2d_4_w_bytes;
  void* conv2d_4_b;
  size_t conv2d_4_b_bytes;
  void* conv2d_5_w;
  size_t conv2d_5_w_bytes;
  void* conv2d_5_b;
  size_t conv2d_5_b_bytes;
  void* conv2d_6_w;
  size_t conv2d_6_w_bytes;
  void* conv2d_6_b;
  size_t conv2d_6_b_bytes;
  void* conv2d_7_w;
  size_t conv2d_7_w_bytes;
  void* batch_normalization_1_gamma;
  size_t batch_normalization_1_gamma_bytes;
  void* batch_normalization_1_beta;
  size_t batch_normalization_1_beta_bytes;
  void* batch_normalization_1_mean;
  size_t batch_normalization_1_mean_bytes;
  void* batch_normalization_1_variance;
  size_t batch_normalization_1_variance_bytes;
  void* conv2d_8_w;
  size_t conv2d_8_w_bytes;
  void* batch_normalization_2_gamma;
  size_t batch_normalization_2_gamma_bytes;
  void* batch_normalization_2_beta;
  size_t batch_normalization_2_beta_bytes;
  void* batch_normalization_2_mean;
  size_t batch_normalization_2_mean_bytes;
  void* batch_normalization_2_variance;
  size_t batch_normalization_2_variance_bytes;
  void* dense_1_w;
  size_t dense_1_w_bytes;
  void* dense_1_b;
  size_t dense_1_b_bytes;

  struct ret_t r;
} RootIn;

int main(int argc, char* argv[]) {
  std::string dir_prefix =
      std::string(STRINGIFY(MODEL_PARAMS_DIR)) + "/resnet/";
  std::string input_path = dir_prefix + "test_input.bin";
  std::string labels_path = dir_prefix + "test_labels.bin";
  const char* conf_path = nullptr;
  const char* output_path = nullptr;
  int batch_size = 64;
  int input_size = 200;

  int opt;
  while ((opt = getopt(argc, argv, "hc:o:b:n:")) != -1) {
    switch (opt) {
    case 'c':
      conf_path = optarg;
      break;
    case 'o':
      output_path = optarg;
      break;
    case 'b':
      batch_size = atoi(optarg);
      break;
    case 'n':
      input_size = atoi(optarg);
      break;
    case 'h':
      fprintf(stderr,
              "Usage: %s [-c CONF_FILE] [-o OUTPUT] [-b BATCH] [-n IMAGES]\n",
              argv[0]);
      return 0;
    default:
      fprintf(stderr,
              "Usage: %s [-c CONF_FILE] [-o OUTPUT] [-b BATCH] [-n IMAGES]\n",
              argv[0]);
      return 1;
    }
  }
  if (batch_size <= 0 || input_size <= 0) {
    fprintf(stderr, "%s: batch size and image count must be positive\n",
            argv[0]);
    return 1;
  }

  std::string conv2d_1_w_path = dir_prefix + "conv2d_1_w.bin";
  void* conv2d_1_w = readTrainedWeights(conv2d_1_w_path.c_str(), 0, 8, 3, 3, 3);
  std::string conv2d_1_b_path = dir_prefix + "conv2d_1_b.bin";
  void* conv2d_1_b = readTrainedWeights(conv2d_1_b_path.c_str(), 0, 1, 8, 1, 1);
  std::string conv2d_2_w_path = dir_prefix + "conv2d_2_w.bin";
  void* conv2d_2_w = readTrainedWeights(conv2d_2_w_path.c_str(), 0, 8, 8, 3, 3);
  std::string conv2d_2_b_path = dir_prefix + "conv2d_2_b.bin";
  void* conv2d_2_b = readTrainedWeights(conv2d_2_b_path.c_str(), 0, 1, 8, 1, 1);
  std::string conv2d_3_w_path = dir_prefix + "conv2d_3_w.bin";
  void* conv2d_3_w = readTrainedWeights(conv2d_3_w_path.c_str(), 0, 8, 8, 3, 3);
  std::string conv2d_3_b_path = dir_prefix + "conv2d_3_b.bin";
  void* conv2d_3_b = readTrainedWeights(conv2d_3_b_path.c_str(), 0, 1, 8, 1, 1);
  std::string conv2d_4_w_path = dir_prefix + "conv2d_4_w.bin";
  void* conv2d_4_w =
      readTrainedWeights(conv2d_4_w_path.c_str(), 0, 16, 8, 3, 3);
  std::string conv2d_4_b_path = dir_prefix + "conv2d_4_b.bin";
  void* conv2d_4_b =
      readTrainedWeights(conv2d_4_b_path.c_str(), 0, 1, 16, 1, 1);
  std::string conv2d_5_w_path = dir_prefix + "conv2d_5_w.bin";
  void* conv2d_5_w =
      readTrainedWeights(conv2d_5_w_path.c_str(), 0, 16, 16, 3, 3);
  std::string conv2d_5_b_path = dir_prefix + "conv2d_5_b.bin";
  void* conv2d_5_b =
      readTrainedWeights(conv2d_5_b_path.c_str(), 0, 1, 16, 1, 1);
  std::string conv2d_6_w_path = dir_prefix + "conv2d_6_w.bin";
  void* conv2d_6_w =
      readTrainedWeights(conv2d_6_w_path.c_str(), 0, 16, 8, 1, 1);
  std::string conv2d_6_b_path = dir_prefix + "conv2d_6_b.bin";
  void* conv2d_6_b =
      readTrainedWeights(conv2d_6_b_path.c_str(), 0, 1, 16, 1, 1);
  std::string conv2d_7_w_path = dir_prefix + "conv2d_7_w.bin";
  void* conv2d_7_w =
      readTrainedWeights(conv2d_7_w_path.c_str(), 0, 16, 16, 3, 3);
  std::string batch_normalization_1_gamma_path =
      dir_prefix + "batch_normalization_1_gamma.bin";
  void* batch_normalization_1_gamma = readTrainedWeights(
      batch_normalization_1_gamma_path.c_str(), 0, 1, 16, 1, 1);
  std::string batch_normalization_1_beta_path =
      dir_prefix + "batch_normalization_1_beta.bin";
  void* batch_normalization_1_beta = readTrainedWeights(
      batch_normalization_1_beta_path.c_str(), 0, 1, 16, 1, 1);
  std::string batch_normalization_1_mean_path =
      dir_prefix + "batch_normalization_1_mean.bin";
  void* batch_normalization_1_mean = readTrainedWeights(
      batch_normalization_1_mean_path.c_str(), 0, 1, 16, 1, 1);
  std::string batch_normalization_1_variance_path =
      dir_prefix + "batch_normalization_1_variance.bin";
  void* batch_normalization_1_variance = readTrainedWeights(
      batch_normalization_1_variance_path.c_str(), 0, 1, 16, 1, 1);
  std::string conv2d_8_w_path = dir_prefix + "conv2d_8_w.bin";
  void* conv2d_8_w =
      readTrainedWeights(conv2d_8_w_path.c_str(), 0, 16, 16, 3, 3);
  std::string batch_normalization_2_gamma_path =
      dir_prefix + "batch_normalization_2_gamma.bin";
  void* batch_normalization_2_gamma = readTrainedWeights(
      batch_normalization_2_gamma_path.c_str(), 0, 1, 16, 1, 1);
  std::string batch_normalization_2_beta_path =
      dir_prefix + "batch_normalization_2_beta.bin";
  void* batch_normalization_2_beta = readTrainedWeights(
      batch_normalization_2_beta_path.c_str(), 0, 1, 16, 1, 1);
  std::string batch_normalization_2_mean_path =
      dir_prefix + "batch_normalization_2_mean.bin";
  void* batch_normalization_2_mean = readTrainedWeights(
      batch_normalization_2_mean_path.c_str(), 0, 1, 16, 1, 1);
  std::string batch_normalization_2_variance_path =
      dir_prefix + "batch_normalization_2_variance.bin";
  void* batch_normalization_2_variance = readTrainedWeights(
      batch_normalization_2_variance_path.c_str(), 0, 1, 16, 1, 1);
  std::string dense_1_w_path = dir_prefix + "dense_1_w.bin";
  void* dense_1_w = readTrainedWeights(dense_1_w_path.c_str(), 0, 1, 1, 16, 10);
  std::string dense_1_b_path = dir_prefix + "dense_1_b.bin";
  void* dense_1_b = readTrainedWeights(dense_1_b_path.c_str(), 0, 1, 10, 1, 1);

  RootIn* args = static_cast<RootIn*>(malloc(sizeof(RootIn)));
  args->conv2d_1_w = conv2d_1_w;
  args->conv2d_1_w_bytes = 0;
  args->conv2d_1_b = conv2d_1_b;
  args->conv2d_1_b_bytes = 0;
  args->conv2d_2_w = conv2d_2_w;
  args->conv2d_2_w_bytes = 0;
  args->conv2d_2_b = conv2d_2_b;
  args->conv2d_2_b_bytes = 0;
  args->conv2d_3_w = conv2d_3_w;
  args->conv2d_3_w_bytes = 0;
  args->conv2d_3_b = conv2d_3_b;
  args->conv2d_3_b_bytes = 0;
  args->conv2d_4_w = conv2d_4_w;
  args->conv2d_4_w_bytes = 0;
  args->conv2d_4_b = conv2d_4_b;
  args->conv2d_4_b_bytes = 0;
  args->conv2d_5_w = conv2d_5_w;
  args->conv2d_5_w_bytes = 0;
  args->conv2d_5_b = conv2d_5_b;
  args->conv2d_5_b_bytes = 0;
  args->conv2d_6_w = conv2d_6_w;
  args->conv2d_6_w_bytes = 0;
  args->conv2d_6_b = conv2d_6_b;
  args->conv2d_6_b_bytes = 0;
  args->conv2d_7_w = conv2d_7_w;
  args->conv2d_7_w_bytes = 0;
  args->batch_normalization_1_gamma = batch_normalization_1_gamma;
  args->batch_normalization_1_gamma_bytes = 0;
  args->batch_normalization_1_beta = batch_normalization_1_beta;
  args->batch_normalization_1_beta_bytes = 0;
  args->batch_normalization_1_mean = batch_normalization_1_mean;
  args->batch_normalization_1_mean_bytes = 0;
  args->batch_normalization_1_variance = batch_normalization_1_variance;
  args->batch_normalization_1_variance_bytes = 0;
  args->conv2d_8_w = conv2d_8_w;
  args->conv2d_8_w_bytes = 0;
  args->batch_normalization_2_gamma = batch_normalization_2_gamma;
  args->batch_normalization_2_gamma_bytes = 0;
  args->batch_normalization_2_beta = batch_normalization_2_beta;
  args->batch_normalization_2_beta_bytes = 0;
  args->batch_normalization_2_mean = batch_normalization_2_mean;
  args->batch_normalization_2_mean_bytes = 0;
  args->batch_normalization_2_variance = batch_normalization_2_variance;
  args->batch_normalization_2_variance_bytes = 0;
  args->dense_1_w = dense_1_w;
  args->dense_1_w_bytes = 0;
  args->dense_1_b = dense_1_b;
  args->dense_1_b_bytes = 0;

  __hpvm__init();
  if (conf_path)
    llvm_hpvm_initializeRuntimeController(conf_path);

  std::string tmp_path = output_path ? std::string(output_path) + ".tmp" : "";
  std::ofstream output;
  if (output_path) {
    output.open(tmp_path, std::ios::binary | std::ios::trunc);
    if (!output) {
      fprintf(stderr, "%s: cannot write '%s'\n", argv[0], tmp_path.c_str());
      return 1;
    }
  }

  startMemTracking();
  for (int start = 0; start < input_size; start += batch_size) {
    int end = std::min(start + batch_size, input_size);
    void* input =
        readInputBatch(input_path.c_str(), nchw, start, end, 3, 32, 32);
    args->input = input;
    args->input_bytes = 0;

    void* dfg = __hpvm__launch(0, root, (void*)args);
    __hpvm__wait(dfg);

    void* result = static_cast<RootIn*>(args)->r.tensor;
    hpvm_request_tensor(result, 0);
    llvm_hpvm_invokeRtControl(result, labels_path.c_str(), start, end);
    if (output_path) {
      Tensor* t = static_cast<Tensor*>(result);
      output.write(static_cast<const char*>(t->host_data), t->size_in_bytes);
    }
    freeBatchMemory();
  }

  if (output_path) {
    output.close();
    if (!output || rename(tmp_path.c_str(), output_path) != 0) {
      fprintf(stderr, "%s: cannot write '%s'\n", argv[0], output_path);
      return 1;
    }
  }
  __hpvm__cleanup();
  free(args);
  return 0;
}
