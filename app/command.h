#pragma once
// Subcommand registry: each app/cmd_*.cpp registers one subcommand with a static Registrar,
// so adding a subcommand touches no other file.
#include <CLI/CLI.hpp>
#include <functional>
#include <string>
#include <vector>

namespace spopt::app {

struct Command {
  std::string name;
  std::string summary;
  std::string example;
  // Declares options on `sub` and returns the function that runs the command (its exit code).
  std::function<std::function<int()>(CLI::App& sub)> setup;
};

std::vector<Command>& commands();

struct Registrar {
  explicit Registrar(Command c) { commands().push_back(std::move(c)); }
};

}  // namespace spopt::app
