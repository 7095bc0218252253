// The MLP from C++: the C API behind small RAII owners; four threads, each with a context of its
// own, run the model 1000 times each and every result must equal the single-threaded one (bit for
// bit) and numpy's (within 1e-4). Usage: mlp_example_cpp LIBRARY DATA_DIR [THREADS CALLS].
#include <cmath>
#include <cstdio>
#include <fstream>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "mlp.h"

namespace {

struct Error : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// `err` by address: read after the call that sets it (argument order is unspecified).
void check(rlx_status_t status, rlx_error_t **err) {
  if (status == RLX_OK) return;
  std::string message = rlx_error_message(*err);
  rlx_error_free(*err);
  throw Error(message);
}

using Model = std::unique_ptr<rlx_model_t, decltype(&rlx_model_close)>;
using Context = std::unique_ptr<rlx_context_t, decltype(&rlx_context_destroy)>;

std::vector<float> load(const std::string &dir, const std::string &name, size_t count) {
  std::vector<float> data(count);
  std::ifstream file(dir + "/" + name + ".bin", std::ios::binary);
  if (!file.read(reinterpret_cast<char *>(data.data()), std::streamsize(count * sizeof(float))))
    throw Error("cannot read " + dir + "/" + name + ".bin");
  return data;
}

}  // namespace

int main(int argc, char **argv) try {
  if (argc != 3 && argc != 5) {
    std::fprintf(stderr, "usage: %s LIBRARY DATA_DIR [THREADS CALLS]\n", argv[0]);
    return 2;
  }
  const int threads = argc == 5 ? std::stoi(argv[3]) : 4, calls = argc == 5 ? std::stoi(argv[4]) : 1000;
  rlx_error_t *err = nullptr;
  Model model(rlx_model_open(argv[1], &err), &rlx_model_close);
  if (!model) check(rlx_error_code(err), &err);
  const std::string dir = argv[2];
  std::vector<std::vector<float>> weights;
  const char *names[] = {"w1", "b1", "w2", "b2"};
  for (const char *name : names) {
    const rlx_tensor_info_t *info = rlx_model_input(model.get(), size_t(rlx_model_find_input(model.get(), name)));
    weights.push_back(load(dir, name, size_t(info->elements)));
  }
  const std::vector<float> x = load(dir, "x", RLX_MLP_INPUT_X_ELEMENTS);
  const std::vector<float> expected = load(dir, "expected", RLX_MLP_OUTPUT_RESULT0_ELEMENTS);
  static const int64_t x_shape[] = RLX_MLP_INPUT_X_SHAPE, y_shape[] = RLX_MLP_OUTPUT_RESULT0_SHAPE;

  auto make_context = [&] {
    rlx_error_t *error = nullptr;
    Context context(rlx_context_create(model.get(), &error), &rlx_context_destroy);
    if (!context) check(rlx_error_code(error), &error);
    for (size_t i = 0; i < weights.size(); ++i)
      check(rlx_context_bind_param(context.get(), names[i], weights[i].data(), weights[i].size() * sizeof(float),
                                   &error), &error);
    return context;
  };
  auto run = [&](rlx_context_t *context, std::vector<float> &y) {
    rlx_error_t *error = nullptr;
    rlx_tensor_t in{const_cast<float *>(x.data()), RLX_MLP_INPUT_X_BYTES, RLX_MLP_INPUT_X_DTYPE,
                    RLX_MLP_INPUT_X_RANK, x_shape};
    rlx_tensor_t out{y.data(), RLX_MLP_OUTPUT_RESULT0_BYTES, RLX_MLP_OUTPUT_RESULT0_DTYPE,
                     RLX_MLP_OUTPUT_RESULT0_RANK, y_shape};
    check(rlx_invoke(context, &in, 1, &out, 1, &error), &error);
  };

  std::vector<float> reference(RLX_MLP_OUTPUT_RESULT0_ELEMENTS);
  run(make_context().get(), reference);
  double worst = 0;
  for (size_t i = 0; i < reference.size(); ++i) worst = std::fmax(worst, std::fabs(reference[i] - expected[i]));

  std::vector<Context> contexts;
  for (int t = 0; t < threads; ++t) contexts.push_back(make_context());
  std::vector<int> mismatches(size_t(threads), 0);
  std::vector<std::string> failures(static_cast<size_t>(threads));
  std::vector<std::thread> workers;
  for (int t = 0; t < threads; ++t)
    workers.emplace_back([&, t] {
      try {
        std::vector<float> y(reference.size());
        for (int call = 0; call < calls; ++call) {
          run(contexts[size_t(t)].get(), y);
          mismatches[size_t(t)] += y != reference;
        }
      } catch (const std::exception &error) {
        failures[size_t(t)] = error.what();
      }
    });
  for (auto &worker : workers) worker.join();
  int total = 0;
  for (int t = 0; t < threads; ++t) {
    if (!failures[size_t(t)].empty()) throw Error(failures[size_t(t)]);
    total += mismatches[size_t(t)];
  }
  std::printf("max error %g; %d threads x %d calls, %d results differ from the single-threaded one\n", worst,
              threads, calls, total);
  return worst <= 1e-4 && total == 0 ? 0 : 1;
} catch (const std::exception &error) {
  std::fprintf(stderr, "error: %s\n", error.what());
  return 1;
}
