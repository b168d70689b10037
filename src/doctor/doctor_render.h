// SPDX-License-Identifier: Apache-2.0
//
// The doctor's result as text (a verdict per question, worst finding first,
// each with evidence, meaning and next step) and as JSON (the same content;
// docs/doctor.md). Pure functions.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "doctor/playbook.h"

namespace tarmac::doctor {

std::string RenderText(const DoctorResult& result, bool use_color);
std::string RenderJson(const DoctorResult& result);
// One finding as RenderJson writes it: check, severity, gpu (null for the
// host), summary, evidence, meaning, action.
nlohmann::json FindingToJson(const Finding& finding);

}  // namespace tarmac::doctor
