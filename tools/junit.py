"""A JUnit report of a tool's checks (imported by tools/engine-test and tools/k8s-test),
as tools/test-summary reads it: one testsuite per group, one testcase per check."""
import xml.etree.ElementTree as ET


def write(path, name, results, skipped_why=""):
    """results: (group, check, status, why, seconds), status PASS, FAIL or SKIP. With
    `skipped_why`, the whole tier did not run, for that reason (an optional tier whose
    prerequisite is absent): the report says so and holds no test."""
    suites = ET.Element("testsuites", name=name)
    if skipped_why:
        suites.set("skipped", skipped_why)
    by_group = {}
    for group, check, status, why, seconds in results:
        by_group.setdefault(group, []).append((check, status, why, seconds))
    for group, cases in by_group.items():
        suite = ET.SubElement(suites, "testsuite", name=group, tests=str(len(cases)),
                              failures=str(sum(c[1] == "FAIL" for c in cases)),
                              skipped=str(sum(c[1] == "SKIP" for c in cases)))
        for check, status, why, seconds in cases:
            case = ET.SubElement(suite, "testcase", classname=group, name=check,
                                 time=f"{seconds:.3f}")
            if status == "FAIL":
                ET.SubElement(case, "failure", message=why)
            elif status == "SKIP":
                ET.SubElement(case, "skipped", message=why)
    ET.ElementTree(suites).write(path, encoding="utf-8", xml_declaration=True)
