// embed MODEL.onnx INPUT.pb... : compiles the model at the inputs' shapes, runs it (on the
// GPU when there is one, else on the CPU reference) and prints each output's shape and first
// values. Built against the installed braze package (examples/embed/CMakeLists.txt).
#include <braze/braze.h>

#include <iostream>

int main(int argc, char** argv) {
  if (argc < 2) {
    std::cerr << "usage: embed MODEL.onnx INPUT.pb...\n";
    return 2;
  }
  try {
    std::vector<braze::Tensor> inputs;
    for (int i = 2; i < argc; ++i) inputs.push_back(braze::read_tensor(argv[i]));
    // Symbolic dims take the given inputs' shapes: compile once to learn the input names.
    braze::CompileOptions options;
    const std::vector<std::string> names = braze::Engine::compile(argv[1]).input_names();
    for (size_t i = 0; i < inputs.size() && i < names.size(); ++i)
      options.shapes[names[i]] = inputs[i].shape();
    const braze::Engine engine = braze::Engine::compile(argv[1], options);
    braze::Session session(engine);
    const std::vector<braze::Tensor> outputs = session.run(inputs);
    std::cout << "braze " << braze::version() << ", " << engine.kernels() << " kernels for "
              << engine.arch() << ", ran on "
              << (session.backend() == braze::Backend::Gpu ? "the GPU" : "the CPU reference")
              << "\n";
    for (size_t i = 0; i < outputs.size(); ++i) {
      const braze::Tensor& t = outputs[i];
      std::cout << engine.output_names()[i] << " " << braze::shape_str(t.shape()) << ":";
      for (int64_t e = 0; e < std::min<int64_t>(t.numel(), 4); ++e)
        std::cout << " " << t.get_f64(e);
      std::cout << "\n";
    }
  } catch (const braze::Error& e) {
    std::cerr << "error: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
