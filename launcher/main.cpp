// SPDX-License-Identifier: MIT
#include "launcher/app.hpp"

int main(int argc, char** argv) { return preflight::app_main(argc, argv); }
