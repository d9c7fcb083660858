/// An `ObjectExpression` prepared for the rows of one entity: its keys resolved to column
/// slots and its tree flattened into postfix steps, so that a batch update evaluating it on
/// millions of rows looks up no name and follows no node.
struct CompiledExpression {
    enum Step {
        case constant(AttributeValue)
        /// The attribute stored in this slot (nil when the row has no such column).
        case column(Int)
        case negate
        case apply(ObjectExpression.Operator)
    }

    let expression: ObjectExpression
    private let steps: [Step]

    /// `expression` with each key's slot from `slot`; nil when a key names no attribute.
    init?(_ expression: ObjectExpression, slot: (String) -> Int?) {
        var steps: [Step] = []
        func flatten(_ node: ObjectExpression.Node) -> Bool {
            switch node {
            case .constant(let value): steps.append(.constant(value))
            case .key(let key):
                guard let slot = slot(key) else { return false }
                steps.append(.column(slot))
            case .negate(let inner):
                guard flatten(inner) else { return false }
                steps.append(.negate)
            case .binary(let op, let left, let right):
                guard flatten(left), flatten(right) else { return false }
                steps.append(.apply(op))
            }
            return true
        }
        guard flatten(expression.root) else { return nil }
        self.expression = expression
        self.steps = steps
    }

    /// The value on the row whose columns are `columns` (a key whose column holds no attribute
    /// value reads as nil).
    /// - Throws: `ExpressionError`, as `ObjectExpression.evaluate`.
    func evaluate<Columns: RandomAccessCollection>(_ columns: Columns) throws -> AttributeValue
    where Columns.Element == ColumnValue, Columns.Index == Int {
        func value(_ step: Step) -> AttributeValue {
            switch step {
            case .constant(let value): return value
            case .column(let slot):
                guard slot < columns.count, case .value(let value) = columns[slot] else { return .null }
                return value
            case .negate, .apply: return .null
            }
        }
        // The usual shapes (`departureTime + 60`, a constant, a copy) without a stack.
        switch steps.count {
        case 1: return value(steps[0])
        case 3:
            if case .apply(let op) = steps[2], !steps[0].isOperation, !steps[1].isOperation {
                return try ObjectExpression.apply(op, value(steps[0]), value(steps[1]))
            }
        default: break
        }
        var stack: [AttributeValue] = []
        stack.reserveCapacity(steps.count)
        for step in steps {
            switch step {
            case .constant, .column: stack.append(value(step))
            case .negate:
                stack.append(try ObjectExpression.negate(stack.removeLast()))
            case .apply(let op):
                let right = stack.removeLast(), left = stack.removeLast()
                stack.append(try ObjectExpression.apply(op, left, right))
            }
        }
        return stack.last ?? .null
    }
}

extension CompiledExpression.Step {
    var isOperation: Bool {
        switch self {
        case .negate, .apply: return true
        case .constant, .column: return false
        }
    }
}
