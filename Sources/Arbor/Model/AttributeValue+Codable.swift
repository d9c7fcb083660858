import Foundation

/// JSON form of a value in a stored model (defaults): one key naming the kind, e.g.
/// `{"int": 42}`, `{"date": 28800}` (seconds since 1970), `{"data": "<base64>"}`, `{"null": true}`.
extension AttributeValue: Codable {
    private enum Kind: String, CodingKey {
        case null, int, double, float, bool, string, date, data, uuid, url, decimal
    }

    public init(from decoder: Decoder) throws {
        let container = try decoder.container(keyedBy: Kind.self)
        guard let kind = container.allKeys.first, container.allKeys.count == 1 else {
            throw DecodingError.dataCorrupted(.init(codingPath: decoder.codingPath,
                                                    debugDescription: "a value needs exactly one kind key"))
        }
        switch kind {
        case .null: self = .null
        case .int: self = .int(try container.decode(Int64.self, forKey: kind))
        case .double: self = .double(try container.decode(Double.self, forKey: kind))
        case .float: self = .float(try container.decode(Float.self, forKey: kind))
        case .bool: self = .bool(try container.decode(Bool.self, forKey: kind))
        case .string: self = .string(try container.decode(String.self, forKey: kind))
        case .date: self = .date(Date(timeIntervalSince1970: try container.decode(Double.self, forKey: kind)))
        case .data:
            guard let data = Data(base64Encoded: try container.decode(String.self, forKey: kind)) else {
                throw DecodingError.dataCorruptedError(forKey: kind, in: container, debugDescription: "invalid base64")
            }
            self = .data(data)
        case .uuid: self = .uuid(try container.decode(UUID.self, forKey: kind))
        case .url: self = .url(try container.decode(URL.self, forKey: kind))
        case .decimal:
            let text = try container.decode(String.self, forKey: kind)
            guard let value = Decimal(string: text, locale: Locale(identifier: "en_US_POSIX")) else {
                throw DecodingError.dataCorruptedError(forKey: kind, in: container, debugDescription: "invalid decimal \(text)")
            }
            self = .decimal(value)
        }
    }

    public func encode(to encoder: Encoder) throws {
        var container = encoder.container(keyedBy: Kind.self)
        switch self {
        case .null: try container.encode(true, forKey: .null)
        case .int(let v): try container.encode(v, forKey: .int)
        case .double(let v): try container.encode(v, forKey: .double)
        case .float(let v): try container.encode(v, forKey: .float)
        case .bool(let v): try container.encode(v, forKey: .bool)
        case .string(let v): try container.encode(v, forKey: .string)
        case .date(let v): try container.encode(v.timeIntervalSince1970, forKey: .date)
        case .data(let v): try container.encode(v.base64EncodedString(), forKey: .data)
        case .uuid(let v): try container.encode(v, forKey: .uuid)
        case .url(let v): try container.encode(v, forKey: .url)
        case .decimal(let v): try container.encode(v.description, forKey: .decimal)
        }
    }
}
