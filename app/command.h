#pragma once
// Subcommand registry: each app/cmd_*.cpp registers one subcommand with a static Registrar,
// so adding a subcommand touches no other file.
#include <CLI/CLI.hpp>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace spopt::app {

struct Command {
  std::string name;
  std::string summary;
  std::string example;
  // Declares options on `sub` and returns the function that runs the command (its exit code).
  std::function<std::function<int()>(CLI::App& sub)> setup;
  // Reads a job or a Paddle/PIR file: takes --max-input-bytes.
  bool reads_input = true;
};

std::vector<Command>& commands();
// The process's own argv, for re-executing a sibling binary with the same arguments.
std::vector<char*>& originalArgs();

// Freeing a multi-gigabyte IR takes seconds of allocator work that the process exit makes
// unnecessary: commands hand their jobs here when done (still reachable, so LSan stays quiet).
template <typename T>
void keepUntilExit(std::unique_ptr<T> object) {
  static auto* kept = new std::vector<std::shared_ptr<void>>();
  kept->push_back(std::shared_ptr<T>(std::move(object)));
}

struct Registrar {
  explicit Registrar(Command c) { commands().push_back(std::move(c)); }
};

}  // namespace spopt::app
