// Allocations through C++'s `operator new`, from two instances of one template: vectors of
// doubles (about two thirds of the bytes) and of strings. Built with g++ -O2, no debug info.
#include <cstdio>
#include <string>
#include <vector>

template <typename T>
__attribute__((noinline)) std::vector<T> make(size_t n) {
  std::vector<T> v;
  for (size_t i = 0; i < n; i++) v.push_back(T());
  return v;
}

int main() {
  size_t total = 0;
  for (int r = 0; r < 200; r++) {
    auto a = make<double>(100000);
    auto b = make<std::string>(10000);
    total += a.size() + b.size();
  }
  std::printf("%zu\n", total);
}
