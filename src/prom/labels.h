// SPDX-License-Identifier: Apache-2.0
//
// A series' label set as a store's answer gives it: names and values,
// sorted by name, each name once. Flat (one array of pairs): a fleet's
// answers hold hundreds of thousands of label sets at once, and a tree
// node per label (std::map) made each cost half as much again. Ordered and
// compared as a std::map of the same pairs would be.
#pragma once

#include <initializer_list>
#include <string>
#include <utility>
#include <vector>

namespace tarmac::prom {

class Labels {
 public:
  using value_type = std::pair<std::string, std::string>;
  using const_iterator = std::vector<value_type>::const_iterator;

  Labels() = default;
  // A name given twice keeps its last value.
  Labels(std::initializer_list<value_type> items);

  // Sets label `name` to `value`, replacing its value when it has one.
  // Cheapest in name order, as stores send them.
  void Set(std::string name, std::string value);
  // The value of label `name`, or null.
  const std::string* Find(const std::string& name) const;
  // Gives back the room the labels set one by one left over.
  void Seal() { items_.shrink_to_fit(); }
  void clear() { items_.clear(); }

  bool empty() const { return items_.empty(); }
  size_t size() const { return items_.size(); }
  const_iterator begin() const { return items_.begin(); }
  const_iterator end() const { return items_.end(); }

  friend bool operator==(const Labels& a, const Labels& b) { return a.items_ == b.items_; }
  friend bool operator<(const Labels& a, const Labels& b) { return a.items_ < b.items_; }

 private:
  // The first label not before `name`.
  std::vector<value_type>::const_iterator Lower(const std::string& name) const;
  std::vector<value_type> items_;
};

}  // namespace tarmac::prom
