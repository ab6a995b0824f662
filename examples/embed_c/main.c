/* embed_c MODEL.onnx SHAPES INPUT.pb... : the C API from C. Compiles the model with the given
 * shapes ("input_0:2x16,input_1:2x16"), runs it (the GPU when there is one, else the CPU
 * reference) and prints each output's shape.
 *   cc main.c $(pkg-config --cflags --libs braze) -o embed_c */
#include <braze/braze_c.h>
#include <stdio.h>
#include <stdlib.h>

static int fail(const char* what) {
  fprintf(stderr, "error: %s: %s\n", what, braze_last_error());
  return 1;
}

int main(int argc, char** argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: embed_c MODEL.onnx SHAPES INPUT.pb...\n");
    return 2;
  }
  braze_compile_options options;
  braze_compile_options_init(&options);
  options.shapes = argv[2];
  braze_engine* engine = NULL;
  if (braze_engine_compile(argv[1], &options, &engine) != BRAZE_OK) return fail("compile");
  size_t n_in = (size_t)(argc - 3), n_out = braze_engine_num_outputs(engine);
  braze_tensor** inputs = calloc(n_in + 1, sizeof *inputs);
  braze_tensor** outputs = calloc(n_out + 1, sizeof *outputs);
  for (size_t i = 0; i < n_in; ++i)
    if (braze_tensor_read(argv[3 + i], &inputs[i]) != BRAZE_OK) return fail(argv[3 + i]);
  braze_session* session = NULL;
  if (braze_session_create(engine, BRAZE_BACKEND_AUTO, &session) != BRAZE_OK) return fail("session");
  if (braze_session_run(session, (const braze_tensor* const*)inputs, n_in, outputs, n_out) != BRAZE_OK)
    return fail("run");
  printf("braze %s (C API)\n", braze_version());
  for (size_t i = 0; i < n_out; ++i) {
    printf("%s [", braze_engine_output_name(engine, i));
    for (size_t d = 0; d < braze_tensor_rank(outputs[i]); ++d)
      printf("%s%lld", d ? "," : "", (long long)braze_tensor_shape(outputs[i])[d]);
    printf("]\n");
    braze_tensor_free(outputs[i]);
  }
  for (size_t i = 0; i < n_in; ++i) braze_tensor_free(inputs[i]);
  free(inputs);
  free(outputs);
  braze_session_free(session);
  braze_engine_free(engine);
  return 0;
}
