// SPDX-License-Identifier: MIT
#include "cli/app.hpp"

int main(int argc, char** argv) { return preflight::app_main(argc, argv); }
